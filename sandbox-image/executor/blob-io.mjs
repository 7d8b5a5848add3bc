// Contents of workspace entries, read safely (by their name in the walk's
// current directory, O_NOFOLLOW, the inode the walk saw) and in bounded chunks, plus
// git's blob ids of them. Shared by the baseline, the change list and the patch.
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync } from 'node:fs';
import { WalkRaced } from './tree-walk.mjs';

export const CHUNK = 1024 * 1024;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

const raced = (path) => new WalkRaced(`${Buffer.from(path, 'latin1').toString('utf8')} changed while it was read; try again`);

/**
 * The entry's bytes in chunks of at most CHUNK: a symlink's target, or a
 * regular file's content. Throws WalkRaced when the file is not the inode
 * the walk saw or its size changed while it was read.
 */
export function* contentChunks(entry) {
  const p = entry.name;
  if (entry.st.isSymbolicLink()) {
    yield readlinkSync(p, { encoding: 'buffer' });
    return;
  }
  let fd;
  try {
    fd = openSync(p, FILE_FLAGS);
  } catch (err) {
    if (err.code === 'ELOOP' || err.code === 'ENOENT') throw raced(entry.path);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.ino !== entry.st.ino || st.dev !== entry.st.dev) throw raced(entry.path);
    const size = entry.st.size;
    let done = 0;
    while (done < size) {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - done));
      const n = readSync(fd, buf, 0, buf.length, done);
      if (n === 0) throw raced(entry.path);
      done += n;
      yield n === buf.length ? buf : buf.subarray(0, n);
    }
    if (readSync(fd, Buffer.allocUnsafe(1), 0, 1, done) !== 0) throw raced(entry.path);
  } finally {
    closeSync(fd);
  }
}

/** git's object id of a blob: sha1 over "blob <size>\0" and the bytes. */
export function blobHasher(size) {
  const h = createHash('sha1');
  h.update(`blob ${size}\0`);
  return h;
}

export const EMPTY_BLOB = 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391';
export const NULL_OID = '0000000000000000000000000000000000000000';

/** The entry's blob id and size, reading it once (contentChunks guarantees the size the walk saw). */
export function hashEntry(entry) {
  if (entry.st.isSymbolicLink()) {
    const target = readlinkSync(entry.name, { encoding: 'buffer' });
    return { oid: blobHasher(target.length).update(target).digest('hex'), size: target.length };
  }
  const size = entry.st.size;
  const h = blobHasher(size);
  for (const chunk of contentChunks(entry)) h.update(chunk);
  return { oid: h.digest('hex'), size };
}
