// Star-wildcard matching over a sequence of items, in time linear in the
// text: the engine under glob.ts, used twice — over the characters of one
// path segment (`*`) and over the segments of a path (`**`).
//
// The pattern is split at its stars into chunks of one-item elements. The
// first chunk must match at the start, the last at the end, and each middle
// chunk is taken at its leftmost place after the previous one — leftmost is
// always safe for star-separated chunks, so nothing is retried. A middle
// chunk is found with String.indexOf when it is literal text, else with the
// bit-parallel Shift-And search: O(text × chunk/32) steps, whatever the
// pattern (a backtracking walk costs text × chunk, a regular expression
// can cost exponentially more).

/** One element of a pattern: a literal item, anything passing `test`, or a star. */
export type Element = { key: string } | { test: (item: string) => boolean } | 'star';

type Chunk = {
  items: readonly Exclude<Element, 'star'>[];
  words: number;
  /** Bit k set for each position k holding that literal; built on first search (most chunks are never searched). */
  lit?: Map<string, Uint32Array>;
  wild: { k: number; test: (item: string) => boolean }[];
  /** The chunk as one string, when every element is a one-character literal. */
  text?: string;
};

/** @example compileWildcard([{ key: 'a' }, 'star', { key: 'c' }])('abbc') // true */
export function compileWildcard(pattern: readonly Element[]): (text: string | readonly string[]) => boolean {
  const chunks: Chunk[] = [];
  let cur: Exclude<Element, 'star'>[] = [];
  for (const e of pattern) {
    if (e === 'star') { chunks.push(compileChunk(cur)); cur = []; } else cur.push(e);
  }
  chunks.push(compileChunk(cur));
  return (text) => matches(chunks, text);
}

function compileChunk(items: Exclude<Element, 'star'>[]): Chunk {
  const words = Math.max(1, Math.ceil(items.length / 32));
  const wild: Chunk['wild'] = [];
  let text: string | undefined = '';
  items.forEach((e, k) => {
    if ('key' in e) {
      if (text !== undefined && e.key.length === 1) text += e.key;
      else text = undefined;
    } else {
      wild.push({ k, test: e.test });
      text = undefined;
    }
  });
  return { items, words, wild, text };
}

function literalMasks(chunk: Chunk): Map<string, Uint32Array> {
  if (chunk.lit) return chunk.lit;
  const lit = new Map<string, Uint32Array>();
  chunk.items.forEach((e, k) => {
    if (!('key' in e)) return;
    let m = lit.get(e.key);
    if (!m) lit.set(e.key, (m = new Uint32Array(chunk.words)));
    m[k >> 5]! |= 1 << (k & 31);
  });
  return (chunk.lit = lit);
}

function matches(chunks: readonly Chunk[], text: string | readonly string[]): boolean {
  const n = text.length;
  if (chunks.length === 1) return chunks[0]!.items.length === n && at(chunks[0]!, text, 0);
  const first = chunks[0]!;
  const last = chunks[chunks.length - 1]!;
  if (first.items.length + last.items.length > n || !at(first, text, 0) || !at(last, text, n - last.items.length)) return false;
  let pos = first.items.length;
  const end = n - last.items.length;
  for (let c = 1; c < chunks.length - 1; c++) {
    const chunk = chunks[c]!;
    const found = chunk.text !== undefined && typeof text === 'string' ? text.indexOf(chunk.text, pos) : shiftAnd(chunk, text, pos, end);
    if (found < 0 || found + chunk.items.length > end) return false;
    pos = found + chunk.items.length;
  }
  return true;
}

function at(chunk: Chunk, text: string | readonly string[], pos: number): boolean {
  for (let k = 0; k < chunk.items.length; k++) {
    const e = chunk.items[k]!;
    const t = text[pos + k]!;
    if ('key' in e ? e.key !== t : !e.test(t)) return false;
  }
  return true;
}

/** Leftmost start of `chunk` in text[from, end), or -1. */
function shiftAnd(chunk: Chunk, text: string | readonly string[], from: number, end: number): number {
  const m = chunk.items.length;
  if (m === 0) return from;
  const { words } = chunk;
  const masks = new Map<string, Uint32Array>();
  const lits = literalMasks(chunk);
  const maskOf = (t: string): Uint32Array => {
    let b = masks.get(t);
    if (b) return b;
    b = new Uint32Array(words);
    const l = lits.get(t);
    if (l) b.set(l);
    for (const w of chunk.wild) if (w.test(t)) b[w.k >> 5]! |= 1 << (w.k & 31);
    masks.set(t, b);
    return b;
  };
  const d = new Uint32Array(words);
  const topWord = (m - 1) >> 5;
  const topBit = 1 << ((m - 1) & 31);
  for (let i = from; i < end; i++) {
    const b = maskOf(text[i]!);
    let carry = 1;
    for (let w = 0; w < words; w++) {
      const old = d[w]!;
      d[w] = ((old << 1) | carry) & b[w]!;
      carry = old >>> 31;
    }
    if (d[topWord]! & topBit) return i - m + 1;
  }
  return -1;
}
