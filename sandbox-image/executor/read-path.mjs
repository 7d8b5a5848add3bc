// readPath: the host's view of a workspace path (file bytes or a listing),
// for the API and dashboard. Same confinement as the tools.
import { constants } from 'node:fs';
import { lstat, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { assertOpenedInside, resolveInside, ToolError, WORKSPACE } from './paths.mjs';
import { PRIVATE_DIR } from './tree-walk.mjs';

const MAX_ENTRIES = 10_000;

export async function readPath(p, limits) {
  try {
    return await readInside(p, limits);
  } catch (err) {
    if (err instanceof ToolError && err.code === 'path_outside_workspace') return { kind: 'outside' };
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return { kind: 'missing' };
    throw err;
  }
}

// Runs while a command may be running (it does not queue behind one), so
// everything after the name check goes through the opened descriptor.
async function readInside(p, limits) {
  const real = await resolveInside(p);
  const st = await stat(real);
  if (st.isDirectory()) return { kind: 'dir', entries: await listDir(real, p) };
  // A FIFO or device has no content to show (and would block a plain open).
  if (!st.isFile()) return { kind: 'file', base64: '' };
  const fh = await open(real, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    assertOpenedInside(fh.fd, p);
    const now = await fh.stat();
    if (!now.isFile()) return { kind: 'file', base64: '' };
    const buf = Buffer.alloc(Math.min(now.size, limits.readPathCapBytes));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { kind: 'file', base64: buf.subarray(0, bytesRead).toString('base64') };
  } finally {
    await fh.close();
  }
}

// Listed through the opened descriptor, so a directory swapped for a
// symlink after the check cannot show another directory's names.
async function listDir(real, p) {
  const fh = await open(real, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    assertOpenedInside(fh.fd, p);
    const at = `/proc/self/fd/${fh.fd}`;
    // The baseline's mount point (baseline-store.mjs) is the sandbox's, not the project's.
    const own = (d) => real === WORKSPACE && d.name === PRIVATE_DIR;
    const dirents = (await readdir(at, { withFileTypes: true })).filter((d) => !own(d)).slice(0, MAX_ENTRIES);
    const entries = [];
    for (const d of dirents) {
      const type = d.isFile() ? 'file' : d.isDirectory() ? 'dir' : d.isSymbolicLink() ? 'symlink' : 'other';
      const size = await lstat(path.join(at, d.name)).then((s) => s.size, () => 0);
      entries.push({ name: d.name, type, size });
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return entries;
  } finally {
    await fh.close();
  }
}
