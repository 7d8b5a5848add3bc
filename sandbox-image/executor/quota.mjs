// Workspace quota without filesystem support: the fallback where the host
// cannot give each workspace its own filesystem (see fs-quota.mjs). The volume lives on the
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
  /** The kernel does not enforce this quota: the executor watches it (bash-tool.mjs) and reserves before writes. */
  kernel = false;

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

  /** After a command: usage over the quota (by one byte when it failed: a write cut short at the quota failed for it). */
  commandHitLimit(result, quotaBytes) {
    return this.exceeds(quotaBytes, result.ok ? 0 : 1);
  }

  /**
   * The usage a command may reach: the quota, or the usage it starts from
   * when an earlier command's overshoot left the workspace over it, so that
   * cleaning up (`rm`) and reading still run while growing does not.
   */
  allowance(quotaBytes) {
    if (!(quotaBytes > 0) || !this.exceeds(quotaBytes)) return quotaBytes;
    return this.base.usage;
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
// Iterative, with its own stack of directories: a chain tens of thousands of
// levels deep must not overflow the call stack (that killed the executor and
// with it the quota).
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
  const stack = [];
  try {
    process.chdir(root);
    stack.push({ names: readdirSync('.'), next: 0 });
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next >= top.names.length) {
        stack.pop();
        if (stack.length > 0) process.chdir('..');
        continue;
      }
      const name = top.names[top.next++];
      const st = lstatOrNull(name);
      if (!st) continue; // removed meanwhile
      add(st);
      if (!st.isDirectory() || !enter(name)) continue;
      stack.push({ names: readdirSync('.'), next: 0 });
    }
  } finally {
    process.chdir(cwd);
  }
  return bytes;
}

function lstatOrNull(name) {
  try {
    return lstatSync(name);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

function enter(name) {
  try {
    process.chdir(name);
    return true;
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return false;
    throw err;
  }
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
