import { randomBytes } from 'node:crypto';
import { readFile, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { copyTemplate, ensureTemplate, type FsShape } from './fs-template.ts';
import { attachLoop, detachLoop } from './host-tools.ts';
import { sandboxLog } from './log.ts';

// Workspace images made ahead, off the hot path: a template copy already on a
// loop device, so a new session's first attach is one rename and one sysfs
// read instead of a copy and two `losetup` runs (bench/sandbox).
//
// A spare is `<prefix>spare-<hex>.spare`: never taken for a session's image
// (`.img`), and every claim on it is a rename, so a session taking it and a
// reaper removing it can never both have it. The device is then checked in
// sysfs to back the renamed file: a number detached and reused meanwhile
// (a reboot, an outside `losetup -d`) is never handed to a session.

export type SpareOptions = { dir: string; namePrefix: string; shape: FsShape; count: number };
type Spare = { file: string; dev: string };

const SUFFIX = '.spare';
// A session's first commands follow its start at once; the refill's spawns wait until they have run.
export const REFILL_DELAY_MS = 1_000;

export class SpareImages {
  readonly #o: SpareOptions;
  readonly #ready: Spare[] = [];
  #filling?: Promise<void>;
  #soon?: { timer: NodeJS.Timeout; fired: Promise<void>; fire: () => void };
  #closed = false;

  constructor(o: SpareOptions) {
    this.#o = o;
  }

  /**
   * Renames a spare to `dest` and returns its device, or null when none is
   * ready (the caller makes the image itself). The caller refills once its
   * container is up: the copy and `losetup` are spawned from this event loop,
   * which a session starting meanwhile would wait for.
   */
  async take(dest: string): Promise<string | null> {
    for (let s = this.#ready.shift(); s; s = this.#ready.shift()) {
      try {
        await rename(s.file, dest);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // reaped meanwhile
        throw err;
      }
      if (await backs(s.dev, dest)) return s.dev;
      // Renamed but not on its device any more: `dest` is a plain fresh image, attached by the caller.
      sandboxLog().warn({ dev: s.dev, file: dest }, 'workspace spare: its loop device no longer backs it; attaching anew');
      return null;
    }
    return null;
  }

  /** Resolves when the refill scheduled or under way (if any) has ended. */
  async ready(): Promise<void> {
    // Someone waits for it now: the timer keeps the process alive meanwhile.
    this.#soon?.timer.ref();
    await this.#soon?.fired;
    await this.#filling;
  }

  /** Refills after REFILL_DELAY_MS (later calls meanwhile join the same one). */
  refillSoon(): void {
    if (this.#soon || this.#closed || this.#o.count <= 0) return;
    let fire!: () => void;
    const fired = new Promise<void>((resolve) => (fire = resolve));
    const timer = setTimeout(() => {
      this.#soon = undefined;
      this.refill();
      fire();
    }, REFILL_DELAY_MS);
    timer.unref();
    this.#soon = { timer, fired, fire };
  }

  /** Makes spares in the background until `count` are ready; a failure is logged and the next take tries again. */
  refill(): void {
    if (this.#closed || this.#o.count <= 0 || this.#filling) return;
    this.#filling = (async () => {
      while (!this.#closed && this.#ready.length < this.#o.count) this.#ready.push(await this.#make());
    })()
      .catch((err: unknown) => sandboxLog().warn({ err }, 'workspace spare could not be made; new sessions make their image on the spot'))
      .finally(() => (this.#filling = undefined));
  }

  /** Stops refilling and removes this process's spares (close). */
  async drain(): Promise<void> {
    this.#closed = true;
    if (this.#soon) clearTimeout(this.#soon.timer);
    this.#soon?.fire(); // nobody waits for a refill that will not come
    this.#soon = undefined;
    await this.#filling;
    for (const s of this.#ready.splice(0)) await claimAndRemove(s.file);
  }

  async #make(): Promise<Spare> {
    const base = path.join(this.#o.dir, `${this.#o.namePrefix}spare-${randomBytes(6).toString('hex')}`);
    // The in-progress name is a half-made image's (`.img.tmp-…`): the reaper clears one left by a crash.
    const tmp = `${base}.img.tmp-${randomBytes(4).toString('hex')}`;
    let dev: string | undefined;
    try {
      await copyTemplate(await ensureTemplate(this.#o.dir, this.#o.shape), tmp);
      dev = await attachLoop(tmp);
      await rename(tmp, `${base}${SUFFIX}`);
      return { file: `${base}${SUFFIX}`, dev };
    } catch (err) {
      if (dev) await detachLoop(dev).catch((e: unknown) => sandboxLog().warn({ err: e, dev }, 'workspace spare: detach after a failed make failed'));
      await rm(tmp, { force: true });
      throw err;
    }
  }
}

/** Spares of `prefix` in `dir` older than `ageMs` (a process that died with its spares), for the reaper. */
export async function staleSpares(dir: string, prefix: string, ageMs: number, now = Date.now()): Promise<string[]> {
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : Promise.reject(err)));
  const out: string[] = [];
  for (const name of names) {
    if (!name.startsWith(`${prefix}spare-`) || !name.endsWith(SUFFIX)) continue;
    const st = await stat(path.join(dir, name)).catch(() => null); // taken meanwhile
    if (st && now - st.mtimeMs > ageMs) out.push(path.join(dir, name));
  }
  return out;
}

/** Claims a spare by renaming it, then detaches and unlinks it; one taken by a session meanwhile is left alone. */
export async function claimAndRemove(file: string): Promise<void> {
  const mine = `${file.slice(0, -SUFFIX.length)}.img.tmp-${randomBytes(4).toString('hex')}`;
  try {
    await rename(file, mine);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  // sysfs names the file by its current path: the device attached to the spare now backs `mine`.
  for (const dev of await devicesBacking(mine)) await detachLoop(dev);
  await rm(mine, { force: true });
}

/** True when loop device `dev` is attached to `file` (sysfs gives the backing file's current path). */
async function backs(dev: string, file: string): Promise<boolean> {
  // No backing_file: the device is not attached (or gone).
  const back = await readFile(`/sys/block/${path.basename(dev)}/loop/backing_file`, 'utf8')
    .catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? '' : Promise.reject(err)));
  return back.trim() !== '' && back.trim() === (await realpath(file).catch(() => file));
}

async function devicesBacking(file: string): Promise<string[]> {
  const names = (await readdir('/sys/block')).filter((n) => /^loop\d+$/.test(n));
  const out: string[] = [];
  for (const n of names) if (await backs(`/dev/${n}`, file)) out.push(`/dev/${n}`);
  return out;
}
