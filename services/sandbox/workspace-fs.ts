import { readdir, stat, unlink, utimes } from 'node:fs/promises';
import path from 'node:path';
import { cloneTemplate, ensureTemplate, type FsShape } from './fs-template.ts';
import { attachLoop, backingFileOf, detachLoop, listLoops, loopsOf } from './host-tools.ts';
import { sandboxLog } from './log.ts';
import { sessionSlug } from './names.ts';
import { claimAndRemove, SpareImages, staleSpares } from './spare-images.ts';

/**
 * Each session's workspace is its own ext4 filesystem: a sparse image file
 * of the quota's size and a fixed inode count, attached to a loop device and
 * mounted by dockerd as a `local` volume. The kernel then enforces bytes,
 * fallocate and inodes exactly. Deleting a workspace is detach + unlink, one
 * file whatever the tree inside.
 */
export type WorkspaceFsOptions = { dir: string; namePrefix: string; /** images kept ready on a loop device (spare-images.ts); 0: none */ spares?: number } & FsShape;

/** Mount options dockerd gets: no setuid or device files from a workspace, no background zeroing of the (hole) inode tables. */
export const WORKSPACE_MOUNT_OPTIONS = 'nosuid,nodev,noinit_itable';

/** A loop device that should hold a session's image holds something else (its number was freed and taken meanwhile). */
export class LoopDeviceMismatchError extends Error {
  readonly code = 'loop_device_mismatch';
}

export type ImageInfo = { slug: string; file: string; mtimeMs: number };

// One operation at a time per image file in this process, whichever manager
// asks: two connects of one session must not attach two loop devices.
const locks = new Map<string, Promise<unknown>>();

export class WorkspaceImages {
  readonly #o: WorkspaceFsOptions;
  readonly #spares: SpareImages;

  constructor(o: WorkspaceFsOptions) {
    this.#o = o;
    this.#spares = new SpareImages({ dir: o.dir, namePrefix: o.namePrefix, shape: o, count: o.spares ?? 0 });
  }

  /** Starts making the spare images in the background: now (at start), or `soon`, once a new session's first commands have run. */
  prepare(soon = false): void {
    if (soon) this.#spares.refillSoon();
    else this.#spares.refill();
  }

  /** Resolves when the spare images being made are ready. */
  sparesReady(): Promise<void> {
    return this.#spares.ready();
  }

  /** Removes this process's spare images (close). */
  close(): Promise<void> {
    return this.#spares.drain();
  }

  get dir(): string {
    return this.#o.dir;
  }

  imageOf(sessionId: string): string {
    return this.#fileOf(sessionSlug(sessionId));
  }

  /** DriverOpts of the session's volume on `dev`. */
  static volumeOptions(dev: string): Record<string, string> {
    return { type: 'ext4', device: dev, o: WORKSPACE_MOUNT_OPTIONS };
  }

  /**
   * The loop device of the session's image, creating the image and attaching
   * it when needed. An attachment that survived a restart of this process is
   * found again (`losetup -j`), so a session never gets two devices.
   */
  attach(sessionId: string): Promise<string> {
    const file = this.imageOf(sessionId);
    return this.#locked(file, async () => {
      if (!(await exists(file))) {
        const spare = await this.#spares.take(file);
        if (spare) return spare;
        // A fresh copy (unless a spare was renamed here but lost its device): nothing can be attached to it yet.
        if (!(await exists(file))) {
          await cloneTemplate(await ensureTemplate(this.#o.dir, this.#o), file);
          return attachLoop(file);
        }
      }
      const [dev, ...extra] = await loopsOf(file);
      // Two devices on one image would mean two mounts of one ext4: keep the first.
      for (const d of extra) await detachLoop(d);
      return dev ?? (await attachLoop(file));
    });
  }

  /**
   * Fails unless `dev` is attached to the session's image. Checked before the
   * mount and again once mounted: a mounted device cannot be detached and
   * given to another file, so the second check settles whose filesystem it is.
   */
  async assertOwns(sessionId: string, dev: string): Promise<void> {
    const file = this.imageOf(sessionId);
    const back = await backingFileOf(dev);
    if (back === file) return;
    // Attached from another mount namespace (a worker container since
    // restarted): sysfs spells the file as that namespace's mount saw it
    // (`/workspaces/NAME.img`), so the device and inode settle it (losetup -j).
    if (back !== null && (await loopsOf(file).catch(notFoundEmpty)).includes(dev)) return;
    throw new LoopDeviceMismatchError(`${dev} is attached to ${back ?? 'nothing'}, not to ${file}`);
  }

  /** Detaches the session's image (kept for a later attach); its mtime becomes the session's last use for the reaper. */
  detach(sessionId: string): Promise<void> {
    return this.#detachFile(this.imageOf(sessionId), true);
  }

  /** Detaches and unlinks the session's image. Idempotent. */
  destroy(sessionId: string): Promise<void> {
    return this.destroyFile(this.imageOf(sessionId));
  }

  destroyFile(file: string): Promise<void> {
    return this.#locked(file, async () => {
      // Detached first: `losetup -j` finds a device by its file, not after the unlink.
      for (const d of await loopsOf(file).catch(notFoundEmpty)) await detachLoop(d);
      await unlink(file).catch(notFoundOk);
    });
  }

  /** The images of this name prefix (templates and half-made copies excluded). */
  async list(): Promise<ImageInfo[]> {
    const names = await readdir(this.#o.dir).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : Promise.reject(err)));
    const out: ImageInfo[] = [];
    for (const name of names) {
      if (!name.startsWith(this.#o.namePrefix) || !name.endsWith('.img')) continue;
      const file = path.join(this.#o.dir, name);
      const st = await stat(file).catch(() => null); // removed meanwhile
      if (st) out.push({ slug: name.slice(this.#o.namePrefix.length, -'.img'.length), file, mtimeMs: st.mtimeMs });
    }
    return out;
  }

  /** Spare images older than `ageMs` (left by a process that died), for the reaper; each is removed with `destroySpare`. */
  staleSpares(ageMs: number, now = Date.now()): Promise<string[]> {
    return staleSpares(this.#o.dir, this.#o.namePrefix, ageMs, now);
  }

  destroySpare(file: string): Promise<void> {
    return claimAndRemove(file);
  }

  /** Half-made copies older than `ageMs` (a crash mid-copy), for the reaper. */
  async staleTemporaries(ageMs: number, now = Date.now()): Promise<string[]> {
    const names = await readdir(this.#o.dir).catch(() => [] as string[]);
    const out: string[] = [];
    for (const name of names) {
      if (!name.startsWith(this.#o.namePrefix) || !/\.img\.tmp-[0-9a-f]+$/.test(name)) continue;
      const st = await stat(path.join(this.#o.dir, name)).catch(() => null);
      if (st && now - st.mtimeMs > ageMs) out.push(path.join(this.#o.dir, name));
    }
    return out;
  }

  /**
   * Loop devices left on images of this prefix that were unlinked (a crash
   * between detach and unlink's order, or an outside rm). One attached from
   * another mount namespace shows as `/<dir's last part>/<name>` (see assertOwns).
   */
  async orphanLoops(): Promise<string[]> {
    const prefix = path.join(this.#o.dir, this.#o.namePrefix);
    const dirName = path.basename(this.#o.dir);
    const ours = (file: string) => file.startsWith(prefix)
      || (path.basename(path.dirname(file)) === dirName && path.basename(file).startsWith(this.#o.namePrefix));
    return (await listLoops()).filter((l) => l.deleted && ours(l.file)).map((l) => l.dev);
  }

  #fileOf(slug: string): string {
    return path.join(this.#o.dir, `${this.#o.namePrefix}${slug}.img`);
  }

  #detachFile(file: string, touch: boolean): Promise<void> {
    return this.#locked(file, async () => {
      for (const d of await loopsOf(file).catch(notFoundEmpty)) await detachLoop(d);
      if (touch) {
        const now = new Date();
        await utimes(file, now, now).catch(notFoundOk);
      }
    });
  }

  #locked<T>(file: string, fn: () => Promise<T>): Promise<T> {
    const prev = locks.get(file) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch((err: unknown) => sandboxLog().debug({ err, file }, 'workspace image operation failed (reported to its caller)'));
    locks.set(file, tail);
    void tail.then(() => {
      if (locks.get(file) === tail) locks.delete(file);
    });
    return run;
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(() => true, (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? false : Promise.reject(err)));
}

function notFoundOk(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}

// `losetup -j` on a file that is gone fails; nothing is attached to it then.
function notFoundEmpty(err: unknown): string[] {
  if (/No such file/i.test(String((err as { stderr?: string }).stderr ?? ''))) return [];
  throw err;
}
