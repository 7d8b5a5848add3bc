// What an uploaded archive may hold (API.md, PUT /v1/sessions/:id/workspace):
// regular files, directories and symbolic links that resolve inside the
// workspace, under relative paths without `..`. Checked twice: by the
// extraction program on every header before any data of it is written, and by
// the executor again on the list it is asked to commit (which came back
// through the host, so it is not trusted either).
import path from 'node:path';
import { ArchiveError } from './tar-reader.mjs';
import { WORKSPACE } from './paths.mjs';

const KIND_OF_TYPE = { 0: 'file', 7: 'file', 5: 'dir', 2: 'symlink' };
const REFUSED_TYPE = {
  1: 'a hard link',
  3: 'a character device',
  4: 'a block device',
  6: 'a FIFO',
};
const MAX_PATH_BYTES = 4095;
/** The workspace's own bookkeeping (baseline-store.mjs, upload.mjs): no upload may name, replace or shadow it. */
const PRIVATE_DIR = '.thinkflow-private';
const STAGING_PREFIX = '.thinkflow-upload-';
const MAX_NAME_BYTES = 255;

const invalid = (name, why) => new ArchiveError('invalid_archive', `entry ${JSON.stringify(name)}: ${why}`, name);

/**
 * The workspace-relative path of an entry name ('.' for the root itself), or
 * an ArchiveError naming it: absolute, `..`, NUL, or too long.
 */
export function entryPath(name) {
  if (typeof name !== 'string' || name === '') throw invalid(String(name), 'an empty name');
  if (name.includes('\0')) throw invalid(name, 'a NUL byte in the name');
  if (name.startsWith('/')) throw invalid(name, 'an absolute path');
  const parts = name.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.includes('..')) throw invalid(name, 'a `..` component (it could lead outside the workspace)');
  const rel = parts.length === 0 ? '.' : parts.join('/');
  if (parts[0] === PRIVATE_DIR || parts[0]?.startsWith(STAGING_PREFIX)) throw invalid(name, `a name the service keeps for itself (${parts[0]})`);
  if (Buffer.byteLength(rel) > MAX_PATH_BYTES || parts.some((p) => Buffer.byteLength(p) > MAX_NAME_BYTES)) throw invalid(name, 'a path too long for the file system');
  return rel;
}

/** True when `target` (a link's content), read from the directory of `rel`, stays inside the workspace. */
export function linkStaysInside(rel, target) {
  const from = path.posix.join(WORKSPACE, path.posix.dirname(rel));
  const abs = path.posix.resolve(from, target);
  return abs === WORKSPACE || abs.startsWith(WORKSPACE + '/');
}

/** Owner always reads and writes; an executable bit anywhere makes it 0755 (what git tracks). */
export function fileMode(mode) {
  return mode & 0o111 ? 0o755 : 0o644;
}

/**
 * A tar header judged: `{path, kind: 'file'|'dir'|'symlink', size, mode, mtime, target?}`.
 * @throws ArchiveError invalid_archive naming the entry
 */
export function classify(h) {
  const rel = entryPath(h.name);
  const refused = REFUSED_TYPE[h.type];
  if (refused) throw invalid(h.name, `${refused} (only regular files, directories and symbolic links are accepted)`);
  // Pre-POSIX archives mark a directory by a trailing slash on a regular-file entry.
  const kind = h.type === '0' && h.name.endsWith('/') ? 'dir' : KIND_OF_TYPE[h.type];
  if (!kind) throw invalid(h.name, `an entry of tar type ${JSON.stringify(h.type)} (only regular files, directories and symbolic links are accepted)`);
  if (rel === '.' && kind !== 'dir') throw invalid(h.name, 'names the workspace root');
  const base = { path: rel, kind, size: kind === 'file' ? h.size : 0, mode: kind === 'dir' ? 0o755 : fileMode(h.mode), mtime: h.mtime };
  if (kind !== 'symlink') return base;
  if (!h.linkname || h.linkname.includes('\0')) throw invalid(h.name, 'a symbolic link without a target');
  if (Buffer.byteLength(h.linkname) > MAX_PATH_BYTES) throw invalid(h.name, 'a symbolic link target too long for the file system');
  if (!linkStaysInside(rel, h.linkname)) throw invalid(h.name, `a symbolic link to ${JSON.stringify(h.linkname)}, outside the workspace`);
  return { ...base, target: h.linkname };
}

/** Throws unless `rel` is already a normalised workspace path (the commit's own check of what it is given). */
export function assertNormalised(rel) {
  if (entryPath(rel) !== rel || rel === '.') throw invalid(rel, 'not a normalised workspace path');
}
