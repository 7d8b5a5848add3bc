// A streaming reader of tar archives (POSIX ustar, pax `x`/`g` headers, GNU
// `L`/`K` long names), with no dependencies: the image's Node 18 has no
// node_modules. It yields one header at a time and hands out the entry's data
// in chunks, so memory stays at one chunk whatever the archive holds.
// Anything it does not understand is an ArchiveError, never a guess.

const BLOCK = 512;
const ZERO_BLOCK = Buffer.alloc(BLOCK);
/** A pax or GNU long-name record larger than this is refused: a header must not fill memory. */
const MAX_META_BYTES = 1024 * 1024;

export class ArchiveError extends Error {
  /** `entry`: the name of the entry at fault, when it has one. */
  constructor(code, message, entry) {
    super(message);
    this.code = code;
    this.entry = entry;
  }
}

/** Pulls exact byte counts out of an async iterable of Buffers. */
class ByteSource {
  constructor(iterable) {
    this.it = iterable[Symbol.asyncIterator]();
    this.buf = Buffer.alloc(0);
    this.ended = false;
  }

  async #more() {
    if (this.ended) return false;
    const { value, done } = await this.it.next();
    if (done) {
      this.ended = true;
      return false;
    }
    this.buf = this.buf.length === 0 ? value : Buffer.concat([this.buf, value]);
    return true;
  }

  /** Exactly n bytes; null when the input ended before any of them; throws when it ended midway. */
  async exact(n) {
    while (this.buf.length < n) {
      if (!(await this.#more())) {
        if (this.buf.length === 0) return null;
        throw new ArchiveError('invalid_archive', 'the archive is truncated');
      }
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }

  /** Up to n bytes, at least one; throws when the input ends first. */
  async some(n) {
    if (this.buf.length === 0 && !(await this.#more())) throw new ArchiveError('invalid_archive', 'the archive is truncated');
    const k = Math.min(n, this.buf.length);
    const out = this.buf.subarray(0, k);
    this.buf = this.buf.subarray(k);
    return out;
  }

  /** Exactly n bytes if they are already here (no wait), else null. */
  buffered(n) {
    if (this.buf.length < n) return null;
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }

  /** Reads and drops at most `limit` more bytes; true when the input ended within them. */
  async drain(limit) {
    let seen = this.buf.length;
    this.buf = Buffer.alloc(0);
    while (seen <= limit) {
      if (!(await this.#more())) return true;
      seen += this.buf.length;
      this.buf = Buffer.alloc(0);
    }
    return false;
  }
}

function text(block, start, len) {
  const end = block.indexOf(0, start);
  return block.toString('utf8', start, end >= 0 && end < start + len ? end : start + len);
}

/** Octal, or GNU base-256 (first byte's high bit set) for values past 8 GiB. */
function number(block, start, len, field) {
  if (block[start] & 0x80) {
    let v = block[start] & 0x7f;
    for (let i = start + 1; i < start + len; i++) v = v * 256 + block[i];
    if (!Number.isSafeInteger(v)) throw new ArchiveError('invalid_archive', `a header's ${field} is out of range`);
    return v;
  }
  const s = text(block, start, len).trim();
  if (s === '') return 0;
  if (!/^[0-7]+$/.test(s)) throw new ArchiveError('invalid_archive', `a header's ${field} is not a number`);
  return parseInt(s, 8);
}

function checksumOk(block) {
  const field = text(block, 148, 8).trim();
  if (!/^[0-7]+$/.test(field)) return false;
  const stored = parseInt(field, 8);
  let sum = 8 * 0x20; // the checksum field itself counts as spaces
  for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += block[i];
  return sum === stored;
}

function parseHeader(block) {
  if (!checksumOk(block)) throw new ArchiveError('invalid_archive', 'a header block is corrupt (checksum mismatch): not a tar archive, or a damaged one');
  const ustar = block.toString('latin1', 257, 263) === 'ustar\0';
  const name = text(block, 0, 100);
  const prefix = ustar ? text(block, 345, 155) : '';
  return {
    name: prefix ? `${prefix}/${name}` : name,
    mode: number(block, 100, 8, 'mode'),
    size: number(block, 124, 12, 'size'),
    mtime: number(block, 136, 12, 'mtime'),
    type: String.fromCharCode(block[156] || 0x30),
    linkname: text(block, 157, 100),
  };
}

/** pax records: "<len> <key>=<value>\n" (POSIX.1-2001). */
function parsePax(buf) {
  const out = {};
  let i = 0;
  while (i < buf.length) {
    const space = buf.indexOf(0x20, i);
    const len = space > i ? Number(buf.toString('latin1', i, space)) : NaN;
    if (!Number.isInteger(len) || len <= 0 || i + len > buf.length) throw new ArchiveError('invalid_archive', 'a pax extended header is malformed');
    const record = buf.toString('utf8', space + 1, i + len - 1);
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    i += len;
  }
  return out;
}

const padding = (size) => (BLOCK - (size % BLOCK)) % BLOCK;

/**
 * The entries of a tar stream, in order: `{name, type, mode, size, mtime,
 * linkname}` with pax and GNU long names applied; metadata records are
 * consumed here. Before asking for the next entry the caller must read the
 * data with `data(entry)` or skip it (`skip(entry)`).
 * Types are the raw tar flags: '0' file, '5' directory, '2' symlink, '1' hard link, ...
 */
export class TarReader {
  constructor(iterable) {
    this.src = new ByteSource(iterable);
    this.pending = 0; // unread data + padding of the current entry
    this.seen = false;
  }

  async next() {
    if (this.pending > 0) throw new Error('TarReader: the previous entry was not read');
    let pax = {};
    let longName;
    let longLink;
    for (;;) {
      const block = await this.src.exact(BLOCK);
      if (block === null) throw new ArchiveError('invalid_archive', this.seen ? 'the archive is truncated (no end-of-archive blocks)' : 'the archive is empty');
      this.seen = true;
      if (block.equals(ZERO_BLOCK)) return null; // end of archive
      const h = parseHeader(block);
      if (h.type === 'x' || h.type === 'g' || h.type === 'L' || h.type === 'K') {
        const body = await this.#meta(h);
        if (h.type === 'x') pax = { ...pax, ...parsePax(body) };
        else if (h.type === 'L') longName = cString(body);
        else if (h.type === 'K') longLink = cString(body);
        continue; // 'g' (global: git archive's commit id) sets nothing an entry needs
      }
      const entry = { ...h };
      if (longName !== undefined) entry.name = longName;
      if (longLink !== undefined) entry.linkname = longLink;
      if (pax.path !== undefined) entry.name = pax.path;
      if (pax.linkpath !== undefined) entry.linkname = pax.linkpath;
      if (pax.size !== undefined) entry.size = paxNumber(pax.size, 'size', entry.name);
      if (pax.mtime !== undefined) entry.mtime = Math.floor(paxNumber(pax.mtime, 'mtime', entry.name));
      // Only regular files carry data in a valid archive; other types' size is skipped, as tar does.
      this.pending = entry.size + padding(entry.size);
      return entry;
    }
  }

  async #meta(h) {
    if (h.size > MAX_META_BYTES) throw new ArchiveError('invalid_archive', `an extended header of ${h.size} bytes (at most ${MAX_META_BYTES})`);
    const body = await this.src.exact(h.size + padding(h.size));
    if (body === null) throw new ArchiveError('invalid_archive', 'the archive is truncated');
    return body.subarray(0, h.size);
  }

  /**
   * The entry's data whole when it is already read in (most small files of
   * an archive), without a wait; null otherwise (then use `data`).
   */
  dataNow(entry) {
    if (this.pending !== entry.size + padding(entry.size)) return null;
    const all = this.src.buffered(this.pending);
    if (all === null) return null;
    this.pending = 0;
    return all.subarray(0, entry.size);
  }

  /** The entry's data, chunk by chunk (views into the input: copy or consume before the next one). */
  async *data(entry) {
    let left = entry.size;
    while (left > 0) {
      const chunk = await this.src.some(left);
      left -= chunk.length;
      this.pending -= chunk.length;
      yield chunk;
    }
    await this.#skipPadding();
  }

  async skip(entry) {
    for await (const _ of this.data(entry)); // eslint-disable-line no-unused-vars
  }

  async #skipPadding() {
    if (this.pending > 0 && (await this.src.exact(this.pending)) === null) throw new ArchiveError('invalid_archive', 'the archive is truncated');
    this.pending = 0;
  }

  /** After the end: reads at most `limit` more bytes (the zero padding of the last record); false when more follow. */
  finish(limit) {
    return this.src.drain(limit);
  }
}

function cString(buf) {
  const end = buf.indexOf(0);
  return buf.toString('utf8', 0, end >= 0 ? end : buf.length);
}

function paxNumber(s, field, name) {
  const n = Number(s);
  if (!Number.isFinite(n) || n < 0 || (field === 'size' && !Number.isSafeInteger(n))) throw new ArchiveError('invalid_archive', `entry ${JSON.stringify(name)}: a pax ${field} that is not a number`, name);
  return n;
}
