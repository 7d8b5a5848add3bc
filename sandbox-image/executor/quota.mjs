// Workspace quota without filesystem support. The volume lives on the
// host's disk with no quota of its own, so usage is tracked two ways:
// statfs (one cheap syscall) tells how much free space the host lost since
// the last exact count, and a walk of the workspace (st_blocks, hard links
// counted once) gives the exact figure whenever that estimate crosses the
// quota. The estimate only errs high (other tenants' writes count too), so a
// walk confirms before anything is refused. Overshoot is bounded by what a
// command can write in one watchdog period plus one walk (README).
import { lstatSync, readdirSync, statfsSync } from 'node:fs';
import path from 'node:path';

const MIN_WALK_GAP_MS = 250;

export class WorkspaceQuota {
  constructor(root) {
    this.root = root;
    this.base = null; // { usage, free, at } from the last walk
  }

  #free() {
    const s = statfsSync(this.root);
    return Number(s.bavail) * Number(s.bsize);
  }

  /** Exact usage in bytes (blocks allocated under the workspace). */
  measure() {
    const free = this.#free();
    const { bytes, complete } = walk(this.root);
    // An unreadable directory (a command can chmod 000 its own) hides its
    // size from the walk: then the host-side estimate is the figure.
    const usage = complete || !this.base ? bytes : Math.max(bytes, this.estimate());
    this.base = { usage, free, at: Date.now() };
    return usage;
  }

  estimate() {
    if (!this.base) return this.measure();
    return Math.max(0, this.base.usage + (this.base.free - this.#free()));
  }

  /** True when usage plus `extra` bytes is over `quotaBytes`, confirmed by a walk. */
  exceeds(quotaBytes, extra = 0) {
    if (!(quotaBytes > 0)) return false;
    if (this.estimate() + extra <= quotaBytes) return false;
    if (this.base && Date.now() - this.base.at < MIN_WALK_GAP_MS && this.base.usage + extra > quotaBytes) return true;
    return this.measure() + extra > quotaBytes;
  }
}

function walk(root) {
  const seen = new Set();
  let bytes = 0;
  let complete = true;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop();
    let names;
    try {
      names = readdirSync(dir);
    } catch {
      complete = false;
      continue;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      let st;
      try {
        st = lstatSync(p, { bigint: false });
      } catch {
        continue; // removed meanwhile
      }
      if (st.nlink > 1) {
        const key = `${st.dev}:${st.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      bytes += st.blocks * 512;
      if (st.isDirectory()) stack.push(p);
    }
  }
  return { bytes, complete };
}
