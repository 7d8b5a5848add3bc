// readPath: the host's view of a workspace path (file bytes or a listing),
// for the API and dashboard. Same confinement as the tools.
import { lstat, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { resolveInside, ToolError } from './paths.mjs';

const MAX_ENTRIES = 10_000;

export async function readPath(p, limits) {
  let real;
  try {
    real = await resolveInside(p);
  } catch (err) {
    if (err instanceof ToolError && err.code === 'path_outside_workspace') return { kind: 'outside' };
    throw err;
  }
  let st;
  try {
    st = await stat(real);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return { kind: 'missing' };
    throw err;
  }
  if (st.isDirectory()) {
    const dirents = (await readdir(real, { withFileTypes: true })).slice(0, MAX_ENTRIES);
    const entries = [];
    for (const d of dirents) {
      const type = d.isFile() ? 'file' : d.isDirectory() ? 'dir' : d.isSymbolicLink() ? 'symlink' : 'other';
      const size = await lstat(path.join(real, d.name)).then((s) => s.size, () => 0);
      entries.push({ name: d.name, type, size });
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { kind: 'dir', entries };
  }
  // A FIFO or device would block the open; it has no content to show.
  if (!st.isFile()) return { kind: 'file', base64: '' };
  const fh = await open(real, 'r');
  try {
    const buf = Buffer.alloc(Math.min(st.size, limits.readPathCapBytes));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { kind: 'file', base64: buf.subarray(0, bytesRead).toString('base64') };
  } finally {
    await fh.close();
  }
}
