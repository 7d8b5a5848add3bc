// Unified-diff hunks of two texts (lines as latin1 strings: bytes kept), in
// the shape git emits and `git apply` reads: 3 lines of context, hunks
// closer than that merged, `@@ -s,c +s,c @@` with git's numbering, and
// "\ No newline at end of file" after a last line without one.
//
// Myers' O(ND) algorithm after trimming the common head and tail. Past
// MAX_D differences it stops looking for the shortest script and replaces
// the differing middle whole: still a correct patch, only a longer one.
const CONTEXT = 3;
const MAX_D = 2000;
const NO_EOL = '\n\\ No newline at end of file\n';

/** Splits a latin1 string into lines, each with its '\n' (the last may have none). */
export function splitLines(text) {
  const lines = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', start)) {
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** Blocks where `a` and `b` differ: `[aStart, aEnd, bStart, bEnd]`, half-open, in order. */
export function diffBlocks(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ids = new Map();
  const id = (s) => {
    let v = ids.get(s);
    if (v === undefined) ids.set(s, (v = ids.size));
    return v;
  };
  const x = Int32Array.from(a.slice(head, a.length - tail), id);
  const y = Int32Array.from(b.slice(head, b.length - tail), id);
  const blocks = myers(x, y) ?? (x.length || y.length ? [[0, x.length, 0, y.length]] : []);
  return blocks.map(([as, ae, bs, be]) => [as + head, ae + head, bs + head, be + head]);
}

// Forward greedy search keeping each round's frontier, then a walk back
// through them; null when more than MAX_D edits are needed.
function myers(x, y) {
  const n = x.length;
  const m = y.length;
  const off = MAX_D + 1;
  const v = new Int32Array(2 * off + 1);
  const trace = [];
  for (let d = 0; d <= MAX_D; d++) {
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let i = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let j = i - k;
      while (i < n && j < m && x[i] === y[j]) {
        i++;
        j++;
      }
      v[off + k] = i;
      if (i >= n && j >= m) return backtrack(trace, n, m, d);
    }
  }
  return null;
}

function backtrack(trace, n, m, dEnd) {
  const edits = []; // [i, j, kind] per edit, from the end: kind 'd' deletes x[i], 'i' inserts y[j]
  let i = n;
  let j = m;
  for (let d = dEnd; d > 0; d--) {
    const vPrev = trace[d]; // the frontier before round d, from k = -d-1 (see the slice above)
    const at = (k) => vPrev[k + d + 1];
    const k = i - j;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevI = at(prevK);
    const prevJ = prevI - prevK;
    while (i > (down ? prevI : prevI + 1) && j > (down ? prevJ + 1 : prevJ)) {
      i--;
      j--;
    }
    if (down) edits.push([i, --j, 'i']);
    else edits.push([--i, j, 'd']);
    i = prevI;
    j = prevJ;
  }
  return blocksOf(edits.reverse());
}

// Consecutive edits with no equal line between them form one block.
function blocksOf(edits) {
  const blocks = [];
  let cur = null;
  for (const [i, j, kind] of edits) {
    if (cur && i <= cur[1] && j <= cur[3]) {
      if (kind === 'd') cur[1] = i + 1;
      else cur[3] = j + 1;
      continue;
    }
    cur = kind === 'd' ? [i, i + 1, j, j] : [i, i, j, j + 1];
    blocks.push(cur);
  }
  return blocks;
}

const range = (start, count) => `${count ? start + 1 : start}${count === 1 ? '' : `,${count}`}`;

/** The hunks of `a` -> `b` as one latin1 string (empty when they are equal). */
export function unifiedHunks(a, b) {
  const blocks = diffBlocks(a, b);
  let out = '';
  for (let s = 0; s < blocks.length; ) {
    let e = s;
    while (e + 1 < blocks.length && blocks[e + 1][0] - blocks[e][1] <= 2 * CONTEXT) e++;
    const aStart = Math.max(0, blocks[s][0] - CONTEXT);
    const aEnd = Math.min(a.length, blocks[e][1] + CONTEXT);
    const bStart = blocks[s][2] - (blocks[s][0] - aStart);
    const bEnd = blocks[e][3] + (aEnd - blocks[e][1]);
    out += `@@ -${range(aStart, aEnd - aStart)} +${range(bStart, bEnd - bStart)} @@\n`;
    let ai = aStart;
    for (let t = s; t <= e; t++) {
      const [as, ae, bs, be] = blocks[t];
      for (; ai < as; ai++) out += line(' ', a[ai]);
      for (let i = as; i < ae; i++) out += line('-', a[i]);
      for (let j = bs; j < be; j++) out += line('+', b[j]);
      ai = ae;
    }
    for (; ai < aEnd; ai++) out += line(' ', a[ai]);
    s = e + 1;
  }
  return out;
}

function line(sign, text) {
  return text.endsWith('\n') ? sign + text : sign + text + NO_EOL;
}
