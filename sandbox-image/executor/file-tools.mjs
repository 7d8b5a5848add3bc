// The file tools of PROTOCOL.md §2 (TOOLS at the end: one function per tool of
// services/protocol/tools.ts judged by paths; a unit test checks they match).
// Every path goes through resolveInside first; every replacement of a file is
// temp file + rename.
//
// The tools call the file system synchronously. Commands run one at a time
// (main.mjs), the workspace is a local filesystem, and every open refuses to
// block (O_NONBLOCK, regular files only); a thread-pool round trip per call
// cost about four times the calls themselves (0.81 against 0.21 ms of CPU for
// a 1 KiB write measured on this project's 2-core machine), most of a write.
import {
  chmodSync, closeSync, constants, createReadStream, createWriteStream, fstatSync, mkdirSync, openSync, readFileSync,
  readSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync,
} from 'node:fs';
import { cp, lstat, readdir } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { assertOpenedInside, resolveInside, ToolError } from './paths.mjs';

let tmpCounter = 0;

function statOrNull(p) {
  try {
    return statSync(p);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

// Opening a FIFO or a device would block the executor (and every command
// queued behind it), so the tools only open regular files.
function requireRegular(st, p) {
  if (st.isDirectory()) throw new ToolError('is_directory', `${p} is a directory`);
  if (!st.isFile()) throw new ToolError('not_a_regular_file', `${p} is not a regular file`);
}

/**
 * Opens an existing regular file in the workspace without ever blocking: a
 * FIFO or device swapped in after a check is refused, not waited on, and the
 * descriptor (not the name) is checked to lie inside the workspace.
 */
function openRegular(real, p, flags = constants.O_RDONLY) {
  let fd;
  try {
    fd = openSync(real, flags | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    // ENXIO: a FIFO with no reader, opened for writing; ELOOP: a symlink swapped in.
    if (err.code === 'ENXIO' || err.code === 'ELOOP') throw new ToolError('not_a_regular_file', `${p} is not a regular file`);
    throw err;
  }
  try {
    requireRegular(fstatSync(fd), p);
    assertOpenedInside(fd, p);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Bytes of the regular files under `dir` (what copying it will add). */
async function treeBytes(dir) {
  let total = 0;
  for (const name of await readdir(dir)) {
    const st = await lstat(path.join(dir, name));
    if (st.isDirectory()) total += await treeBytes(path.join(dir, name));
    else if (st.isFile()) total += st.size;
  }
  return total;
}

/** Writes via a temporary file in the same directory, so readers never see half a file. */
async function atomicReplace(real, fill) {
  const existing = statOrNull(real);
  if (existing && existing.isDirectory()) throw new ToolError('is_directory', 'target is a directory');
  const dir = path.dirname(real);
  mkdirSync(dir, { recursive: true });
  // Created exclusively by fill() (flag 'wx'): a name planted in advance cannot redirect the write.
  const tmp = path.join(dir, `.${path.basename(real)}.tf-${process.pid}-${Date.now()}-${++tmpCounter}.tmp`);
  try {
    await fill(tmp);
    if (existing) chmodSync(tmp, existing.mode & 0o7777);
    renameSync(tmp, real);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never made, or already gone: the error that matters is `err`
    }
    throw err;
  }
}

const isEmpty = (s) => s === undefined || s === null || s === '';

/** Refuses a write of `bytes` more that would take the workspace past its quota. */
export function reserve(quota, limits, bytes) {
  if (quota && quota.exceeds(limits.workspaceQuotaBytes, bytes)) {
    const mb = Math.round(limits.workspaceQuotaBytes / 1024 ** 2);
    throw new ToolError('workspace_full', `workspace quota of ${mb} MiB would be exceeded`);
  }
}

export async function write(cmd, limits, quota) {
  if (isEmpty(cmd.content) && cmd.allow_empty !== true) {
    throw new ToolError('empty_content', 'write with empty content needs allow_empty="true"');
  }
  const content = cmd.content ?? '';
  reserve(quota, limits, Buffer.byteLength(content));
  const real = await resolveInside(cmd.path);
  await atomicReplace(real, (tmp) => writeFileSync(tmp, content, { flag: 'wx' }));
  return { bytes_written: Buffer.byteLength(content) };
}

export async function append(cmd, limits, quota) {
  if (isEmpty(cmd.content)) throw new ToolError('empty_content', 'append needs non-empty content');
  reserve(quota, limits, Buffer.byteLength(cmd.content));
  const real = await resolveInside(cmd.path);
  mkdirSync(path.dirname(real), { recursive: true });
  const fd = openRegular(real, cmd.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
  try {
    writeFileSync(fd, cmd.content);
  } finally {
    closeSync(fd);
  }
  return { bytes_written: Buffer.byteLength(cmd.content) };
}

export async function mkdirP(cmd) {
  const real = await resolveInside(cmd.path);
  mkdirSync(real, { recursive: true });
  const st = statSync(real);
  if (!st.isDirectory()) throw new ToolError('not_a_directory', 'path exists and is not a directory');
  return {};
}

export async function touch(cmd) {
  const real = await resolveInside(cmd.path);
  const now = new Date();
  try {
    utimesSync(real, now, now);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
    mkdirSync(path.dirname(real), { recursive: true });
    writeFileSync(real, '', { flag: 'a' });
  }
  return {};
}

export async function copy(cmd, limits, quota) {
  if (isEmpty(cmd.dest)) throw new ToolError('bad_request', 'copy needs dest');
  const src = await resolveInside(cmd.path);
  const srcStat = statOrNull(src);
  if (!srcStat) throw new ToolError('not_found', `${cmd.path}: no such file or directory`);
  if (!srcStat.isDirectory()) requireRegular(srcStat, cmd.path);
  let dest = await resolveInside(cmd.dest);
  const destStat = statOrNull(dest);
  // cp(1) semantics: copying onto an existing directory puts the source inside it.
  if (destStat && destStat.isDirectory()) dest = await resolveInside(path.join(dest, path.basename(src)));
  if (dest === src) throw new ToolError('bad_request', 'source and destination are the same');
  // Where the kernel enforces the quota there is nothing to reserve (and no tree to walk).
  if (!quota?.kernel) reserve(quota, limits, srcStat.isDirectory() ? await treeBytes(src) : srcStat.size);
  if (srcStat.isDirectory()) {
    if (dest.startsWith(src + '/')) throw new ToolError('bad_request', 'cannot copy a directory into itself');
    mkdirSync(path.dirname(dest), { recursive: true });
    await cp(src, dest, { recursive: true, force: true, verbatimSymlinks: true });
    return {};
  }
  const from = openRegular(src, cmd.path);
  try {
    await atomicReplace(dest, (tmp) => pipeline(createReadStream(null, { fd: from, autoClose: false, start: 0 }), createWriteStream(tmp, { flags: 'wx' })));
  } finally {
    closeSync(from);
  }
  return { bytes_written: srcStat.size };
}

export async function edit(cmd, limits, quota) {
  if (isEmpty(cmd.old_text)) throw new ToolError('bad_request', 'edit needs non-empty old text');
  const real = await resolveInside(cmd.path);
  const fd = openRegular(real, cmd.path);
  let text;
  try {
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  const first = text.indexOf(cmd.old_text);
  if (first < 0) throw new ToolError('edit_no_match', 'old text does not occur in the file');
  // Overlapping occurrences count too: the replacement would be ambiguous either way.
  const second = text.indexOf(cmd.old_text, first + 1);
  if (second >= 0) {
    let n = 2;
    for (let i = text.indexOf(cmd.old_text, second + 1); i >= 0; i = text.indexOf(cmd.old_text, i + 1)) n++;
    throw new ToolError('edit_ambiguous', `old text occurs ${n} times; it must occur exactly once`);
  }
  const updated = text.slice(0, first) + (cmd.new_text ?? '') + text.slice(first + cmd.old_text.length);
  reserve(quota, limits, Buffer.byteLength(updated));
  await atomicReplace(real, (tmp) => writeFileSync(tmp, updated, { flag: 'wx' }));
  return { bytes_written: Buffer.byteLength(updated) };
}

/** Reads at most `cap` bytes so a huge file cannot blow up the executor. */
export async function read(cmd, limits) {
  const real = await resolveInside(cmd.path);
  const cap = limits.readCapBytes;
  const fd = openRegular(real, cmd.path);
  try {
    const buf = Buffer.alloc(Math.min(fstatSync(fd).size, cap) + 1);
    const bytesRead = readSync(fd, buf, 0, buf.length, 0);
    const truncated = bytesRead > cap;
    return { stdout: utf8Prefix(buf.subarray(0, Math.min(bytesRead, cap))), stdout_truncated: truncated };
  } finally {
    closeSync(fd);
  }
}

/** Decodes a byte prefix without a broken multi-byte character at its end. */
export function utf8Prefix(buf) {
  let end = buf.length;
  let back = 0;
  while (end - back - 1 >= 0 && back < 3 && (buf[end - back - 1] & 0xc0) === 0x80) back++;
  const lead = buf[end - back - 1];
  if (lead !== undefined && lead >= 0xc0) {
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    if (back + 1 < need) end = end - back - 1;
  }
  return buf.subarray(0, end).toString('utf8');
}

/**
 * What `exec` runs for each file tool, by its protocol name: `(command, limits, quota)` → result fields
 * (`bytes_written`, `stdout`…), or a thrown ToolError. bash runs in bash-tool.mjs.
 */
export const TOOLS = { write, append, mkdir: mkdirP, touch, copy, edit, read };
