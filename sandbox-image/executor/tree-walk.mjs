// The walk of the workspace that baselines, change lists and patches share
// (workspace-out.mjs). It runs as root (CAP_DAC_READ_SEARCH: a file or
// directory a command made unreadable is still seen) over a tree the session's
// commands control, so it never goes through a name twice: it holds one
// directory descriptor at a time, works in it as the current directory
// (relative names: one lookup each), opens each child directory with
// O_NOFOLLOW, checks it is the inode it listed, and climbs back through `..`
// (never a symlink) checking that inode too. A tree rearranged under the
// walk makes it fail (WalkRaced), never wander outside.
//
// Paths are latin1 strings, one character per byte: any file name survives
// JSON and compares bytewise exactly as git sorts it. Stats are plain numbers
// (times in ms as doubles: the same nanoseconds always give the same double).
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

/** git's idea of a file mode: symlink, executable or plain. */
export function gitMode(st) {
  if (st.isSymbolicLink()) return '120000';
  return (st.mode & 0o100) !== 0 ? '100755' : '100644';
}

// Opens a directory (relative to the current one) and makes it the current one.
function enterDir(path, expect) {
  const fd = openSync(path, DIR_FLAGS);
  const st = fstatSync(fd);
  if (expect && (st.ino !== expect.ino || st.dev !== expect.dev)) {
    closeSync(fd);
    throw new WalkRaced('the workspace changed while it was read (a directory was moved); try again');
  }
  process.chdir(`/proc/self/fd/${fd}`);
  return { fd, st };
}

/**
 * Every regular file and symlink under `root`, in no particular order, as
 * `{path, name, st}`: `st` an lstat, `name` a Buffer valid relative to the
 * current directory until the next entry is asked for (a consumer may await
 * in between; nothing else may change directory meanwhile). Other file types
 * (FIFOs, sockets) are not project content. The current directory is
 * restored when the walk ends, however it ends.
 */
export function* treeEntries(root) {
  const home = process.cwd();
  let cur = enterDir(root, null);
  // One frame per directory being listed: its names, the next index, its own stat.
  const stack = [{ names: readdirSync('.', { encoding: 'buffer' }), next: 0, st: cur.st, prefix: '' }];
  try {
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next >= top.names.length) {
        stack.pop();
        if (stack.length > 0) cur = climb(cur, stack[stack.length - 1].st);
        continue;
      }
      const name = top.names[top.next++];
      const text = name.toString('latin1');
      if (skipped(text, stack.length - 1)) continue;
      const st = lstatOrNull(name);
      if (!st) continue; // removed meanwhile
      const path = top.prefix + text;
      if (st.isDirectory()) {
        const child = enterDir(name, st);
        closeSync(cur.fd);
        cur = child;
        stack.push({ names: readdirSync('.', { encoding: 'buffer' }), next: 0, st, prefix: `${path}/` });
      } else if (st.isFile() || st.isSymbolicLink()) {
        yield { path, name, st };
      }
    }
  } finally {
    closeSync(cur.fd);
    process.chdir(home);
  }
}

function climb(cur, parentSt) {
  const up = enterDir('..', parentSt);
  closeSync(cur.fd);
  return up;
}

function lstatOrNull(p) {
  try {
    return lstatSync(p);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}
