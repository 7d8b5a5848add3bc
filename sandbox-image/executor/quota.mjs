// Workspace quota without filesystem support. The volume lives on the
// host's disk with no quota of its own, so usage is tracked two ways:
// statfs (one cheap syscall) tells how much free space the host lost since
// the last exact count, and an exact count — a walk of the workspace
// (st_blocks, hard links once) plus the deleted-but-open files that command
// processes still hold — is made whenever that estimate crosses the quota.
// The estimate only ever errs high (other tenants' writes count; space freed
// by anyone raises the baseline instead of lowering the estimate), so the
// exact count confirms before anything is refused. The walk runs as root
// with CAP_DAC_READ_SEARCH and descends with relative names, so neither an
// unreadable directory nor a path longer than PATH_MAX hides a file.
import { lstatSync, readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import { asRoot, RUN_AS } from './identity.mjs';

const MIN_WALK_GAP_MS = 250;

export class WorkspaceQuota {
  constructor(root) {
    this.root = root;
    this.base = null; // { usage, free, at } from the last exact count
  }

  #free() {
    const s = statfsSync(this.root);
    return Number(s.bavail) * Number(s.bsize);
  }

  /** Exact usage in bytes: blocks under the workspace plus deleted files still held open by commands. */
  measure() {
    const free = this.#free();
    const seen = new Set();
    const walked = asRoot(() => countWorkspace(this.root, seen));
    // Read with the command user's euid: /proc/<pid>/fd of its processes is ours to read, not root's.
    const held = heldDeletedFiles(this.root, seen);
    const bytes = walked + held.bytes;
    const unknown = held.unknown;
    // A command process that hid its descriptors (non-dumpable) may hold
    // deleted files: then the host-side estimate is the figure.
    const usage = unknown && this.base ? Math.max(bytes, this.estimate()) : bytes;
    this.base = { usage, free, at: Date.now() };
    return usage;
  }

  estimate() {
    if (!this.base) return this.measure();
    const free = this.#free();
    // Space freed (by this workspace or anyone else) never becomes headroom.
    if (free > this.base.free) this.base.free = free;
    return this.base.usage + (this.base.free - free);
  }

  /**
   * True when usage plus `extra` bytes is over `quotaBytes`, confirmed by an
   * exact count. `watchdog` (the periodic check while a command runs) trusts
   * a count over the quota for MIN_WALK_GAP_MS instead of counting again.
   */
  exceeds(quotaBytes, extra = 0, { watchdog = false } = {}) {
    if (!(quotaBytes > 0)) return false;
    if (this.estimate() + extra <= quotaBytes) return false;
    if (watchdog && this.base && Date.now() - this.base.at < MIN_WALK_GAP_MS && this.base.usage + extra > quotaBytes) return true;
    return this.measure() + extra > quotaBytes;
  }
}

// Descends with process.chdir() and relative names (synchronous, so nothing
// else of the executor runs meanwhile), then returns to where it started.
function countWorkspace(root, seen) {
  const cwd = process.cwd();
  let bytes = 0;
  const add = (st) => {
    if (st.nlink > 1 || st.isDirectory() === false) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    bytes += st.blocks * 512;
  };
  const walk = (depth) => {
    for (const name of readdirSync('.')) {
      let st;
      try {
        st = lstatSync(name);
      } catch (err) {
        if (err.code === 'ENOENT') continue; // removed meanwhile
        throw err;
      }
      add(st);
      if (!st.isDirectory()) continue;
      try {
        process.chdir(name);
      } catch (err) {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') continue;
        throw err;
      }
      walk(depth + 1);
      process.chdir('..');
    }
  };
  try {
    process.chdir(root);
    walk(0);
  } finally {
    process.chdir(cwd);
  }
  return bytes;
}

// Deleted files a command process still holds open take host disk space
// that no walk sees.
function heldDeletedFiles(root, seen) {
  let bytes = 0;
  let unknown = false;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid || pid === '1') continue;
    let fds;
    try {
      // A non-dumpable process's /proc entry belongs to root: one of the command user's hides its descriptors.
      if (statSync(`/proc/${pid}`).uid !== RUN_AS.uid) {
        if (isCommandUser(pid)) unknown = true;
        continue;
      }
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (!target.startsWith(root + '/') || !target.endsWith(' (deleted)')) continue;
        const st = statSync(`/proc/${pid}/fd/${fd}`);
        const key = `${st.dev}:${st.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
        bytes += st.blocks * 512;
      } catch {
        // closed meanwhile
      }
    }
  }
  return { bytes, unknown };
}

function isCommandUser(pid) {
  try {
    const m = /\nUid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m !== null && Number(m[1]) === RUN_AS.uid;
  } catch {
    return false;
  }
}
