// A directory as a gzip'd tar stream, for `thinkflow submit --workspace DIR`:
// read file by file as the upload goes (never the whole tree in memory),
// everything included (`.git` too: the workspace is the repository). Regular
// files, directories and symbolic links are packed as they are; hard links
// become plain copies; sockets, FIFOs and devices are skipped (the server
// refuses them) and reported through `onSkip`.
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';

const BLOCK = 512;
const encoder = new TextEncoder();

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0');
}

/** A pax extended header (`x`) for what ustar cannot hold: long names and link targets. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const base = Buffer.byteLength(body);
  // The length counts its own digits: settle on the length that does.
  let len = base;
  for (let next = base + String(len).length; next !== len; next = base + String(len).length) len = next;
  return Buffer.from(`${len}${body}`);
}

function header(fields: { name: string; mode: number; size: number; mtime: number; type: string; linkname?: string }): Buffer {
  const b = Buffer.alloc(BLOCK);
  b.write(fields.name, 0, 100, 'utf8');
  b.write(octal(fields.mode & 0o7777, 8), 100, 'latin1');
  b.write(octal(0, 8), 108, 'latin1');
  b.write(octal(0, 8), 116, 'latin1');
  b.write(octal(fields.size, 12), 124, 'latin1');
  b.write(octal(Math.floor(fields.mtime), 12), 136, 'latin1');
  b.fill(0x20, 148, 156);
  b.write(fields.type, 156, 'latin1');
  if (fields.linkname) b.write(fields.linkname, 157, 100, 'utf8');
  b.write('ustar\x0000', 257, 'latin1');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${octal(sum, 7)}\0`, 148, 'latin1');
  return b;
}

const pad = (size: number) => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** The headers of one entry: a pax header first when the name or link target does not fit ustar. */
function headers(name: string, st: { mode: number; size: number; mtimeMs: number }, type: string, linkname = ''): Buffer[] {
  const long = encoder.encode(name).length > 99 || encoder.encode(linkname).length > 99;
  const out: Buffer[] = [];
  if (long) {
    const pax = Buffer.concat([paxRecord('path', name), ...(linkname ? [paxRecord('linkpath', linkname)] : [])]);
    out.push(header({ name: 'PaxHeader', mode: 0o644, size: pax.length, mtime: 0, type: 'x' }), pax, pad(pax.length));
  }
  out.push(header({ name: long ? name.slice(0, 99) : name, mode: st.mode, size: type === '0' ? st.size : 0, mtime: st.mtimeMs / 1000, type, linkname: long ? '' : linkname }));
  return out;
}

async function* entries(root: string, rel: string, onSkip: (p: string, why: string) => void): AsyncGenerator<Buffer> {
  const names = (await readdir(rel ? path.join(root, rel) : root)).sort();
  for (const name of names) {
    const r = rel ? `${rel}/${name}` : name;
    const abs = path.join(root, r);
    const st = await lstat(abs);
    if (st.isDirectory()) {
      yield* headers(`${r}/`, st, '5');
      yield* entries(root, r, onSkip);
    } else if (st.isSymbolicLink()) {
      yield* headers(r, st, '2', await readlink(abs));
    } else if (st.isFile()) {
      yield* headers(r, st, '0');
      let read = 0;
      const data = st.size > 0 ? (createReadStream(abs, { end: st.size - 1 }) as AsyncIterable<Buffer>) : [];
      for await (const chunk of data) {
        read += chunk.length;
        yield chunk;
      }
      // A file that shrank while it was read would break the archive: fail instead.
      if (read !== st.size) throw new Error(`${r} changed while it was packed (${read} of ${st.size} bytes)`);
      yield pad(st.size);
    } else {
      onSkip(r, 'not a regular file, directory or symbolic link');
    }
  }
}

/** The tree under `dir` as a tar.gz stream (paths relative to `dir`); a file that cannot be read fails the stream. */
export function packDirectory(dir: string, onSkip: (p: string, why: string) => void): Readable {
  async function* tar(): AsyncGenerator<Buffer> {
    yield* entries(dir, '', onSkip);
    yield Buffer.alloc(BLOCK * 2);
  }
  const gz = createGzip();
  // pipeline() destroys the gzip stream with the error, so the upload fails instead of hanging.
  pipeline(Readable.from(tar()), gz, () => {});
  return gz;
}
