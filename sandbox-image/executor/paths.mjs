// Path confinement, checked here in the container where the files are:
// the host cannot see symlinks that the session's own commands created.
import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';

export const WORKSPACE = process.env.THINKFLOW_WORKSPACE || '/workspace';
const MAX_LINK_HOPS = 40;

export class ToolError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const inside = (p) => p === WORKSPACE || p.startsWith(WORKSPACE + '/');

/**
 * Resolves `p` (relative to the workspace, or absolute) to a real path with
 * every existing symlink followed; a missing tail is kept as written so
 * write/mkdir can create it. Throws `path_outside_workspace` when the
 * lexical or the real path leaves the workspace (dangling links included).
 */
export async function resolveInside(p) {
  if (typeof p !== 'string' || p === '') throw new ToolError('bad_request', 'path is required');
  if (p.includes('\0')) throw new ToolError('bad_request', 'path contains a NUL byte');
  const lexical = path.resolve(WORKSPACE, p);
  if (!inside(lexical)) throw outside(p);
  const real = followLinks(lexical);
  if (!inside(real)) throw outside(p);
  return real;
}

function outside(p) {
  return new ToolError('path_outside_workspace', `path ${JSON.stringify(p)} resolves outside ${WORKSPACE}`);
}

// Like realpath(3), but a component that does not exist ends the walk
// instead of failing, and link targets are expanded component by component
// so `..` inside a link target is honoured. Synchronous, like the file tools
// (file-tools.mjs): on the workspace's local filesystem a thread-pool round
// trip per component cost several times the lstat itself.
function followLinks(abs) {
  const parts = abs.split('/').filter(Boolean);
  let cur = '/';
  let hops = 0;
  while (parts.length > 0) {
    const name = parts.shift();
    if (name === '.') continue;
    if (name === '..') {
      cur = path.dirname(cur);
      continue;
    }
    const next = path.join(cur, name);
    let st;
    try {
      st = lstatSync(next);
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return path.resolve(next, ...parts);
      throw err;
    }
    if (!st.isSymbolicLink()) {
      cur = next;
      continue;
    }
    if (++hops > MAX_LINK_HOPS) throw new ToolError('io_error', 'too many levels of symbolic links');
    const target = readlinkSync(next);
    if (target.startsWith('/')) cur = '/';
    parts.unshift(...target.split('/').filter(Boolean));
  }
  return cur;
}

/**
 * After open(): the file actually opened must lie in the workspace. Checking
 * the descriptor, not the name, closes the race with a command that swaps a
 * path for a symlink between resolveInside() and open().
 */
export function assertOpenedInside(fd, p) {
  const real = readlinkSync(`/proc/self/fd/${fd}`);
  if (!inside(real)) throw outside(p);
}
