// The walk of the workspace that baselines, change lists and patches share
// (workspace-out.mjs). It runs as root (CAP_DAC_READ_SEARCH: a file or
// directory a command made unreadable is still seen) over a tree the session's
// commands control, so it never goes through a name twice: it holds one
// directory descriptor at a time, opens each child through it with
// O_NOFOLLOW, checks the child is the inode it listed, and climbs back
// through `..` (never a symlink) checking that inode too. A tree rearranged
// under the walk makes it fail (WalkRaced), never wander outside.
//
// Paths are latin1 strings, one character per byte: any file name survives
// JSON and compares bytewise exactly as git sorts it.
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync } from 'node:fs';

/** Entries that are the sandbox's own, never the project's: the baseline mount point and upload staging. */
export const PRIVATE_DIR = '.thinkflow-private';
const UPLOAD_STAGING_PREFIX = '.thinkflow-upload-';
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export class WalkRaced extends Error {
  code = 'workspace_changed';
}

/** Top-level names that belong to the sandbox; `.git` anywhere (a patch cannot carry it, git apply refuses it). */
export function skipped(name, depth) {
  if (name === '.git') return true;
  return depth === 0 && (name === PRIVATE_DIR || name.startsWith(UPLOAD_STAGING_PREFIX));
}

/** `/proc/self/fd/<fd>/<name>` as a Buffer path, so names that are not UTF-8 reach the kernel unchanged. */
export function under(fd, name) {
  return Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), Buffer.from(name, 'latin1')]);
}

/** git's idea of a file mode: symlink, executable or plain. */
export function gitMode(st) {
  if (st.isSymbolicLink()) return '120000';
  return (Number(st.mode) & 0o100) !== 0 ? '100755' : '100644';
}

function openDir(path, expect) {
  const fd = openSync(path, DIR_FLAGS);
  const st = fstatSync(fd, { bigint: true });
  if (expect && (st.ino !== expect.ino || st.dev !== expect.dev)) {
    closeSync(fd);
    throw new WalkRaced('the workspace changed while it was read (a directory was moved); try again');
  }
  return { fd, st };
}

/**
 * Calls `visit(entry)` for every regular file and symlink under `root`, in
 * no particular order; `entry = {path, name, dirFd, st}` with a bigint lstat.
 * `visit` may read the entry through `under(dirFd, name)` but must not keep
 * `dirFd`. Other file types (FIFOs, sockets) are not project content.
 */
export async function walkTree(root, visit) {
  let cur = openDir(root, null);
  // One frame per directory being listed: its names, the next index, its own stat.
  const stack = [{ names: listNames(cur.fd), next: 0, st: cur.st, prefix: '' }];
  try {
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next >= top.names.length) {
        stack.pop();
        if (stack.length > 0) cur = climb(cur, stack[stack.length - 1].st);
        continue;
      }
      const name = top.names[top.next++];
      if (skipped(name, stack.length - 1)) continue;
      const st = lstatOrNull(under(cur.fd, name));
      if (!st) continue; // removed meanwhile
      const path = top.prefix + name;
      if (st.isDirectory()) {
        const child = openDir(under(cur.fd, name), st);
        closeSync(cur.fd);
        cur = child;
        stack.push({ names: listNames(cur.fd), next: 0, st, prefix: `${path}/` });
      } else if (st.isFile() || st.isSymbolicLink()) {
        await visit({ path, name, dirFd: cur.fd, st });
      }
    }
  } finally {
    closeSync(cur.fd);
  }
}

function climb(cur, parentSt) {
  const up = openDir(`/proc/self/fd/${cur.fd}/..`, parentSt);
  closeSync(cur.fd);
  return up;
}

function listNames(fd) {
  return readdirSync(`/proc/self/fd/${fd}`, { encoding: 'buffer' }).map((b) => b.toString('latin1'));
}

function lstatOrNull(p) {
  try {
    return lstatSync(p, { bigint: true });
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}
