// One change as a section of a git patch, in the format `git diff --binary
// --full-index` writes and `git apply` reads: `diff --git` header, mode
// lines, full blob ids, then unified hunks for text or a "GIT binary patch"
// (zlib deflate in git's base85 lines) for binary content. Text means no NUL
// in the first 8000 bytes (git's rule) and at most TEXT_MAX bytes a side;
// bigger files go as binary literals, streamed, never held whole.
import { createDeflate, deflateSync } from 'node:zlib';
import { blobHasher, EMPTY_BLOB, NULL_OID } from './blob-io.mjs';
import { splitLines, unifiedHunks } from './line-diff.mjs';

export const TEXT_MAX = 8 * 1024 * 1024;
const SNIFF = 8000;
const EN85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';
const ESCAPES = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 34: '"', 92: '\\' };

/** `prefix + path` as git writes it: C-quoted when it holds control, quote, backslash or non-ASCII bytes. */
export function quoted(prefix, path) {
  const raw = prefix + path;
  if (!/[\x00-\x1f"\\\x7f-\xff]/.test(raw)) return raw;
  let out = '"';
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (ESCAPES[c]) out += `\\${ESCAPES[c]}`;
    else if (c < 0x20 || c >= 0x7f) out += `\\${c.toString(8).padStart(3, '0')}`;
    else out += raw[i];
  }
  return `${out}"`;
}

/** git's base85 line: a length character, then 5 characters per 4 bytes. */
function base85Line(bytes) {
  const n = bytes.length;
  let out = n <= 26 ? String.fromCharCode(64 + n) : String.fromCharCode(96 + n - 26);
  for (let i = 0; i < n; i += 4) {
    let acc = 0;
    for (let s = 0; s < 4; s++) acc = acc * 256 + (i + s < n ? bytes[i + s] : 0);
    const group = new Array(5);
    for (let c = 4; c >= 0; c--) {
      group[c] = EN85[acc % 85];
      acc = Math.floor(acc / 85);
    }
    out += group.join('');
  }
  return `${out}\n`;
}

/** Writes a `literal <size>` hunk of the chunks (deflated, base85), streamed. */
async function writeLiteral(sink, size, chunks) {
  await sink.write(`literal ${size}\n`);
  let pending = Buffer.alloc(0);
  const flushLines = async (all) => {
    let text = '';
    let at = 0;
    for (; pending.length - at >= 52 || (all && at < pending.length); at += 52) text += base85Line(pending.subarray(at, at + 52));
    pending = pending.subarray(at);
    if (text) await sink.write(text);
  };
  if (size <= 1024 * 1024) {
    pending = deflateSync(Buffer.concat([...chunks]));
  } else {
    const z = createDeflate({ level: 1 });
    const out = (async () => {
      for await (const piece of z) {
        pending = pending.length ? Buffer.concat([pending, piece]) : piece;
        await flushLines(false);
      }
    })();
    for (const chunk of chunks) if (!z.write(chunk)) await new Promise((r) => z.once('drain', r));
    z.end();
    await out;
  }
  await flushLines(true);
  await sink.write('\n');
}

function changedMeanwhile(path) {
  const err = new Error(`${Buffer.from(path, 'latin1').toString('utf8')} changed while the patch was written; try again`);
  err.code = 'workspace_changed';
  return err;
}

const isBinary = (buf) => buf.subarray(0, SNIFF).includes(0);

/**
 * Writes the section of one change. `side` objects are `{mode, oid, size,
 * chunks()}` (chunks: a fresh iterator of the content), or null for the
 * missing side of an addition or deletion. Mode-kind changes (file <->
 * symlink) are written by the caller as a deletion and an addition.
 */
export async function writeSection(sink, path, from, to) {
  let head = `diff --git ${quoted('a/', path)} ${quoted('b/', path)}\n`;
  if (!from) head += `new file mode ${to.mode}\n`;
  else if (!to) head += `deleted file mode ${from.mode}\n`;
  else if (from.mode !== to.mode) head += `old mode ${from.mode}\nnew mode ${to.mode}\n`;
  const oldOid = from ? from.oid : NULL_OID;
  const newOid = to ? to.oid : NULL_OID;
  if (oldOid === newOid) return sink.write(head); // a mode change only
  head += `index ${oldOid}..${newOid}${from && to && from.mode === to.mode ? ` ${to.mode}` : ''}\n`;
  const small = (s) => !s || s.size <= TEXT_MAX;
  const oldBuf = from && small(from) ? Buffer.concat([...from.chunks()]) : null;
  const newBuf = to && small(to) ? Buffer.concat([...to.chunks()]) : null;
  // The id in the index line must be that of the bytes written (git apply checks it for binary patches).
  if (newBuf && blobHasher(newBuf.length).update(newBuf).digest('hex') !== newOid) throw changedMeanwhile(path);
  const text = small(from) && small(to) && !(oldBuf && isBinary(oldBuf)) && !(newBuf && isBinary(newBuf));
  if (!text) {
    await sink.write(`${head}GIT binary patch\n`);
    await writeLiteral(sink, to ? to.size : 0, to ? (newBuf ? [newBuf] : to.chunks()) : []);
    return writeLiteral(sink, from ? from.size : 0, from ? (oldBuf ? [oldBuf] : from.chunks()) : []);
  }
  // An empty file added or deleted has no hunk, and git writes no ---/+++ for it.
  if ((!from && newOid === EMPTY_BLOB) || (!to && oldOid === EMPTY_BLOB)) return sink.write(head);
  const a = oldBuf ? splitLines(oldBuf.toString('latin1')) : [];
  const b = newBuf ? splitLines(newBuf.toString('latin1')) : [];
  head += `--- ${from ? quoted('a/', path) : '/dev/null'}\n+++ ${to ? quoted('b/', path) : '/dev/null'}\n`;
  return sink.write(head + unifiedHunks(a, b));
}
