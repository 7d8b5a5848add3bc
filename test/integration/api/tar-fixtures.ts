import { once } from 'node:events';
import { createGzip, gzipSync } from 'node:zlib';

// Hand-made tar archives for the upload tests: exactly the entries a test
// names, hostile ones included (absolute names, `..`, links out, devices),
// which no well-behaved tar would write.

export type FixtureEntry = {
  name: string;
  /** tar type flag: '0' file, '5' dir, '2' symlink, '1' hard link, '3' char device, '4' block device, '6' FIFO */
  type?: string;
  data?: string | Buffer;
  linkname?: string;
  mode?: number;
  /** Declared size when it differs from the data. */
  size?: number;
  /** A name over 100 bytes goes in a pax header (POSIX) or a GNU `L` record (GNU tar's default). @default 'pax' */
  longName?: 'pax' | 'gnu';
};

const BLOCK = 512;

function header(e: FixtureEntry, size: number): Buffer {
  const b = Buffer.alloc(BLOCK);
  b.write(e.name, 0, 100, 'utf8');
  b.write(`${(e.mode ?? 0o644).toString(8).padStart(7, '0')}\0`, 100, 'latin1');
  b.write('0000000\0', 108, 'latin1');
  b.write('0000000\0', 116, 'latin1');
  b.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  b.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136, 'latin1');
  b.fill(0x20, 148, 156);
  b.write(e.type ?? '0', 156, 'latin1');
  if (e.linkname) b.write(e.linkname, 157, 100, 'utf8');
  b.write('ustar\x0000', 257, 'latin1');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
}

const pad = (n: number) => Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const base = Buffer.byteLength(body);
  let len = base;
  for (let next = base + String(len).length; next !== len; next = base + String(len).length) len = next;
  return Buffer.from(`${len}${body}`);
}

/** The record that carries a long name before its entry. */
function longNameRecord(e: FixtureEntry): Buffer[] {
  if (Buffer.byteLength(e.name) <= 100) return [];
  const body = e.longName === 'gnu' ? Buffer.from(`${e.name}\0`) : paxRecord('path', e.name);
  const kind = e.longName === 'gnu' ? { name: '././@LongLink', type: 'L' } : { name: 'PaxHeader/x', type: 'x' };
  return [header(kind, body.length), body, pad(body.length)];
}

/** A plain tar of the entries, with its two end-of-archive blocks. */
export function tar(entries: FixtureEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : e.data ?? Buffer.alloc(0);
    parts.push(...longNameRecord(e), header(e, e.size ?? data.length), data, pad(data.length));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

export const tgz = (entries: FixtureEntry[]) => gzipSync(tar(entries));

/**
 * A gzip bomb: one entry declaring `bytes` of zeros, compressed to about a
 * thousandth of that (zlib on zeros), made chunk by chunk so the test itself
 * never holds the expansion.
 */
export async function bomb(bytes: number, name = 'zeros.bin'): Promise<Buffer> {
  const z = createGzip({ level: 9 });
  const out: Buffer[] = [];
  z.on('data', (c: Buffer) => out.push(c));
  const ended = once(z, 'end');
  z.write(header({ name }, bytes));
  const zero = Buffer.alloc(1024 * 1024);
  for (let left = bytes; left > 0; left -= zero.length) {
    if (!z.write(left >= zero.length ? zero : zero.subarray(0, left))) await once(z, 'drain');
  }
  z.end(Buffer.concat([pad(bytes), Buffer.alloc(BLOCK * 2)]));
  await ended;
  return Buffer.concat(out);
}
