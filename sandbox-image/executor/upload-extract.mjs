// The extraction program of a workspace upload. The host runs it with
// `docker exec` as the command user (setpriv: uid 1000, no capability, no
// new privileges) and streams the uploaded bytes to its stdin; it never runs
// as root and never writes outside the staging directory it is given.
//
//   node upload-extract.mjs STAGING ALLOWANCE_BYTES MAX_ENTRIES
//
// gzip is recognised by its magic bytes. Every header is judged
// (archive-entry.mjs) before any byte of its data is written; the entries are
// laid out under STAGING/tree as they will land (staging-tree.mjs). stdout
// gets JSON lines:
//   {"e": {path, kind, size, target?}}            one per entry, in order
//   {"done": {files, bytes, entries}}              the archive was read whole
//   {"error": {code, message, entry?}}             then exit status 1
// The executor's commit (upload-commit.mjs) moves the tree into place; if
// that never happens, the staging directory is removed and nothing changed.
import { closeSync, futimesSync, openSync, symlinkSync, writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { classify } from './archive-entry.mjs';
import { StagingTree } from './staging-tree.mjs';
import { ArchiveError, TarReader } from './tar-reader.mjs';

const BLOCK_CHARGE = 4096; // what one inode, directory or tail block costs at least
/** Zero padding after the end-of-archive blocks that is read before stopping (tar pads to 10 KiB records). */
const TRAILER_BYTES = 1024 * 1024;
const FLUSH_BYTES = 64 * 1024;

const [staging, allowanceArg, maxEntriesArg] = process.argv.slice(2);
// Modes come out as classify() gives them (0644, 0755), whatever umask docker exec had.
process.umask(0o022);
const allowance = allowanceArg === 'none' ? Infinity : Number(allowanceArg);
const maxEntries = Number(maxEntriesArg);

let out = '';
function emit(msg) {
  out += JSON.stringify(msg) + '\n';
  if (out.length >= FLUSH_BYTES) flush();
}
function flush() {
  if (out) process.stdout.write(out);
  out = '';
}

const full = (why) => new ArchiveError('workspace_full', why);

/** stdin as bytes, gunzipped when it starts with gzip's magic. */
async function source() {
  const it = process.stdin[Symbol.asyncIterator]();
  const first = await it.next();
  async function* raw() {
    if (!first.done) yield first.value;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  }
  const head = first.done ? Buffer.alloc(0) : first.value;
  if (!(head[0] === 0x1f && head[1] === 0x8b)) return raw();
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  // Errors surface where the gunzipped bytes are read (the for-await below).
  pipeline(Readable.from(raw()), gunzip).catch(() => {});
  return gunzip;
}

function writeAll(fd, chunk) {
  for (let off = 0; off < chunk.length; ) off += writeSync(fd, chunk, off);
}

async function writeFile(reader, header, entry, abs) {
  const fd = openSync(abs, 'wx', entry.mode);
  try {
    const whole = reader.dataNow(header);
    if (whole !== null) writeAll(fd, whole);
    else for await (const chunk of reader.data(header)) writeAll(fd, chunk);
    futimesSync(fd, header.mtime, header.mtime);
  } finally {
    closeSync(fd);
  }
}

async function extract() {
  const reader = new TarReader(await source());
  const tree = new StagingTree(`${staging}/tree`);
  let used = 0;
  let entries = 0;
  let files = 0;
  let bytes = 0;
  for (let h = await reader.next(); h !== null; h = await reader.next()) {
    const entry = classify(h);
    if (entry.path === '.') {
      await reader.skip(h); // the root's own directory entry (`tar -C dir .`)
      continue;
    }
    if (++entries > maxEntries) throw full(`the archive holds more than ${maxEntries} entries (the workspace's inode limit)`);
    used += BLOCK_CHARGE + Math.ceil(entry.size / BLOCK_CHARGE) * BLOCK_CHARGE;
    if (used > allowance) throw full(`the archive expands past the workspace quota (${allowance} bytes free)`);
    const line = { path: entry.path, kind: entry.kind, size: entry.size };
    if (entry.target !== undefined) line.target = entry.target;
    emit({ e: line }); // judged (policy) by the host while the rest streams
    const abs = tree.place(entry.path, entry.kind, h.name);
    if (entry.kind === 'file') {
      await writeFile(reader, h, entry, abs);
      files++;
      bytes += entry.size;
    } else {
      await reader.skip(h);
      if (entry.kind === 'symlink') {
        symlinkSync(entry.target, abs);
        files++;
      }
    }
  }
  await reader.finish(TRAILER_BYTES);
  return { files, bytes, entries };
}

function failure(err) {
  if (err instanceof ArchiveError) return { code: err.code, message: err.message, ...(err.entry !== undefined ? { entry: err.entry } : {}) };
  if (err && (err.code === 'ENOSPC' || err.code === 'EDQUOT' || err.code === 'EFBIG')) return { code: 'workspace_full', message: 'the archive expands past the workspace quota' };
  // zlib: not gzip after all, a damaged stream, or one cut short.
  if (err && typeof err.code === 'string' && err.code.startsWith('Z_')) return { code: 'invalid_archive', message: `the gzip stream is corrupt or truncated (${err.message})` };
  return { code: 'extract_failed', message: String((err && err.message) || err) };
}

/** The last line must reach the host before the process ends: exit only once stdout took it. */
function finish(msg, code) {
  emit(msg);
  const last = out;
  out = '';
  process.stdout.write(last, () => process.exit(code));
}

extract().then(
  (done) => finish({ done }, 0),
  (err) => finish({ error: failure(err) }, 1),
);
