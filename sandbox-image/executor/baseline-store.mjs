// The baseline's storage: the workspace as it was after its seeded files or
// uploads, before its first command (API.md, GET …/changes). It lives on the
// workspace's own filesystem (so it lasts as long as the workspace and counts
// against its quota) in a directory no command can reach: the container
// mounts the workspace volume a second time under /var/lib/thinkflow (mode
// 0700, root), and hides `/workspace/.thinkflow-private` under an empty
// read-only tmpfs (container-spec.ts).
//
// Layout of <private>/baseline: `current` names a generation directory
// `g-<ms>-<hex>` holding `manifest.json` (path -> mode, size, stat key, blob
// id; plus the object index) and `pack` (every distinct blob once, in raw
// deflate segments of at most 1 MiB, or stored as is when deflate does not
// pay). A new baseline is a new generation; `current` is replaced by rename,
// so readers see the old one or the new one, never half of either.
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { WORKSPACE } from './paths.mjs';
import { PRIVATE_DIR } from './tree-walk.mjs';

export const PRIVATE_ROOT = process.env.THINKFLOW_PRIVATE_ROOT || '/var/lib/thinkflow/ws/.thinkflow-private';
const STORE = `${PRIVATE_ROOT}/baseline`;
const FAILED = `${STORE}/failed.json`;
/** Entries changed this close to the baseline's own timestamp are hashed again whatever their stat says (git's racy-clean rule). */
const RACY_MS = 50;

/** `no_baseline`: none taken yet; `baseline_failed`: taking it failed (the reason is in the message). */
export class NoBaseline extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

class Unsupported extends Error {
  code = 'baseline_unsupported';
}

/**
 * A container made before workspaces had a private area (no second mount,
 * no tmpfs over PRIVATE_DIR) would put the store in plain sight of commands:
 * refuse instead. Must run as root (the second mount is under a 0700 directory).
 */
export function assertPrivateArea() {
  if (process.env.THINKFLOW_PRIVATE_ROOT) return; // a test's own layout
  const ws = statSync(WORKSPACE);
  const hidden = statSync(`${WORKSPACE}/${PRIVATE_DIR}`, { throwIfNoEntry: false });
  const second = statSync(`${PRIVATE_ROOT}/..`, { throwIfNoEntry: false });
  if (!hidden || hidden.dev === ws.dev || !second || second.dev !== ws.dev || second.ino !== ws.ino) {
    throw new Unsupported('this sandbox was created before workspace baselines existed; it gets them once its container is made again');
  }
}

/** Writes one generation: add() each walked entry, then commit(). */
export class BaselineWriter {
  constructor() {
    mkdirSync(STORE, { recursive: true, mode: 0o700 });
    this.startedMs = Date.now();
    this.gen = `g-${this.startedMs}-${randomBytes(4).toString('hex')}`;
    this.dir = `${STORE}/${this.gen}`;
    mkdirSync(this.dir, { mode: 0o700 });
    this.pack = openSync(`${this.dir}/pack`, 'w', 0o600);
    this.offset = 0;
    this.entries = {};
    this.objects = {};
    this.bytes = 0;
  }

  /** Stores the entry's content (once per blob id) and records it. `chunks` is contentChunks(entry). */
  add(entry, mode, chunks, hasher) {
    const start = this.offset;
    const segs = [];
    let deflate = true;
    for (const chunk of chunks) {
      hasher.update(chunk);
      const z = deflate ? deflateRawSync(chunk, { level: 1 }) : null;
      // Data that does not shrink by a tenth (media, archives) is stored as is from then on.
      if (z && z.length > chunk.length * 0.9) deflate = false;
      const stored = z && z.length <= chunk.length * 0.9 ? z : chunk;
      writeSync(this.pack, stored, 0, stored.length, this.offset);
      segs.push([this.offset, stored.length, stored === chunk ? 0 : 1]);
      this.offset += stored.length;
    }
    const oid = hasher.digest('hex');
    if (this.objects[oid]) this.offset = start; // known blob: the bytes just written are overwritten next
    else {
      this.objects[oid] = segs;
      this.bytes += this.offset - start;
    }
    const st = entry.st;
    this.entries[entry.path] = [mode, st.size, st.ino, st.mtimeMs, st.ctimeMs, oid];
  }

  /** Makes this generation current; returns what was stored. */
  commit() {
    fsyncSync(this.pack);
    closeSync(this.pack);
    const baselineAt = new Date().toISOString();
    const manifestPath = `${this.dir}/manifest.json`;
    writeFileSync(manifestPath, JSON.stringify({ version: 1, baseline_at: baselineAt, entries: this.entries, objects: this.objects }), { mode: 0o600 });
    const fd = openSync(manifestPath, 'r');
    fsyncSync(fd);
    closeSync(fd);
    writeFileSync(`${STORE}/current.tmp`, `${this.gen}\n`, { mode: 0o600 });
    renameSync(`${STORE}/current.tmp`, `${STORE}/current`);
    rmSync(FAILED, { force: true });
    this.#dropOlder();
    return { baseline_at: baselineAt, files: Object.keys(this.entries).length, stored_bytes: this.offset };
  }

  /** Leaves nothing half-written behind. */
  abandon() {
    try {
      closeSync(this.pack);
    } catch {
      // already closed by commit()
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  // Generations other than the current one that started before this one
  // (finished and replaced, or abandoned by a crash); one that started later is another writer's, still at work.
  #dropOlder() {
    const current = currentGeneration();
    for (const name of readdirSync(STORE)) {
      if (!name.startsWith('g-') || name === current) continue;
      if (statSync(`${STORE}/${name}`).mtimeMs <= this.startedMs) rmSync(`${STORE}/${name}`, { recursive: true, force: true });
    }
  }
}

/** Remembers why no baseline could be taken, for the change list to say (best effort: a full disk may refuse this too). */
export function recordFailure(reason) {
  mkdirSync(STORE, { recursive: true, mode: 0o700 });
  writeFileSync(FAILED, JSON.stringify({ at: new Date().toISOString(), reason }), { mode: 0o600 });
}

/**
 * Forgets the baseline (after an upload): the next command takes a new one
 * first, so an upload does not pay for a walk of the whole workspace and a
 * second upload before any command costs nothing more. Until then the change
 * list is empty, which is the truth: nothing ran since the workspace was set.
 */
export function dropBaseline() {
  seenSettled = false;
  rmSync(`${STORE}/current`, { force: true });
  rmSync(FAILED, { force: true });
  let names = [];
  try {
    names = readdirSync(STORE);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  for (const name of names) if (name.startsWith('g-')) rmSync(`${STORE}/${name}`, { recursive: true, force: true });
}

function currentGeneration() {
  try {
    return readFileSync(`${STORE}/current`, 'utf8').trim();
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

// Once settled, a baseline is only replaced (workspace-out.mjs, another process) or dropped by an upload, which
// happens in this process (dropBaseline): the executor keeps the answer instead of asking the store as root before
// every command, because each switch to root and back is a setxid broadcast to every thread of the process (4 per
// command: 1.2 ms of the container's CPU per 1 KiB append on this VM, four times the append itself).
let seenSettled = false;

/** True when this process has seen the baseline settled since the last drop: no need to ask the store. */
export function knownSettled() {
  return seenSettled;
}

/** True when a baseline exists or its failure was recorded (nothing more to take before a command). */
export function baselineSettled() {
  if (currentGeneration() !== null) return (seenSettled = true);
  try {
    statSync(FAILED);
    return (seenSettled = true);
  } catch (err) {
    if (err.code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * The current baseline: `{gen, baselineAt, entries, racy(entry), read(oid) ->
 * chunks, close()}`. Throws NoBaseline. A generation replaced while it is
 * being opened is looked up once more. `reuse`: a baseline opened before,
 * returned as is when it is still the current generation (the executor keeps one).
 */
export function openBaseline(reuse = null) {
  for (let attempt = 0; ; attempt++) {
    const gen = currentGeneration();
    if (gen === null) {
      const failed = failureReason();
      throw failed ? new NoBaseline('baseline_failed', failed) : new NoBaseline('no_baseline', 'no baseline yet: no command has run in this workspace');
    }
    if (reuse && reuse.gen === gen) return reuse;
    try {
      return openGeneration(gen);
    } catch (err) {
      if (err.code !== 'ENOENT' || attempt > 0) throw err;
    }
  }
}

function failureReason() {
  try {
    const f = JSON.parse(readFileSync(FAILED, 'utf8'));
    return `no baseline: it could not be taken at ${f.at} (${f.reason})`;
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

function openGeneration(gen) {
  const dir = `${STORE}/${gen}`;
  const manifestFd = openSync(`${dir}/manifest.json`, 'r');
  let m;
  let fenceMs;
  try {
    fenceMs = fstatSync(manifestFd).ctimeMs;
    m = JSON.parse(readFileSync(manifestFd, 'utf8'));
  } finally {
    closeSync(manifestFd);
  }
  let pack = null; // opened on the first read: a change list needs none
  return {
    gen,
    baselineAt: m.baseline_at,
    entries: m.entries,
    /** A stat key that matches still cannot be trusted this close to the baseline's own timestamp. */
    racy: (e) => e[3] >= fenceMs - RACY_MS || e[4] >= fenceMs - RACY_MS,
    *read(oid) {
      pack ??= openSync(`${dir}/pack`, 'r');
      for (const [off, len, z] of m.objects[oid] ?? []) {
        const buf = Buffer.allocUnsafe(len);
        if (readSync(pack, buf, 0, len, off) !== len) throw new Error(`baseline pack is short at ${off}`);
        yield z ? inflateRawSync(buf) : buf;
      }
    },
    close() {
      if (pack !== null) closeSync(pack);
      pack = null;
    },
  };
}
