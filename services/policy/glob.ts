// Path globs of POLICY.md §6, matched in linear-bounded time (§7 "Glob
// matching is linear"). picomatch compiles globs to backtracking regular
// expressions: `*a*a*a*a*a*a*a*c` against a 120-character path ran for
// minutes on the event loop. Here a glob is matched in two linear passes of
// wildcard.ts: over the segments of the path (`**` is the star) and over the
// characters of a segment (`*`).
//
// Supported: `**` (zero or more segments; inside a segment it is `*`), `*`
// and `?` (within a segment, dotfiles included), `[abc]`, `[a-z]`, `[!x]`
// / `[^x]`, `{a,b}` alternatives and `\` escapes. Case-sensitive.

import { compileWildcard, type Element } from './wildcard.ts';

/** Limits of §7: a glob over them is a load error. */
export const MAX_GLOB_LENGTH = 512;
export const MAX_GLOB_WILDCARDS = 16;
/** `{a,b}{c,d}…` multiplies; more alternatives than this is a load error. */
const MAX_BRACE_EXPANSIONS = 16;

export class GlobError extends Error {}

/**
 * @throws GlobError naming the limit or the syntax problem
 * @example compileGlobMatcher('docs/**\/*.md')('docs/a/b.md') // true
 */
export function compileGlobMatcher(glob: string): (path: string) => boolean {
  checkLimits(glob);
  const alternatives = expandBraces(glob).map(compileAlternative);
  return (path) => {
    const segs = segmentsOf(path);
    return alternatives.some((m) => m(segs));
  };
}

// One path is tested against every path rule in a row: split it once.
let lastPath = '';
let lastSegs: readonly string[] = [''];
function segmentsOf(path: string): readonly string[] {
  if (path !== lastPath) {
    lastSegs = path.split('/');
    lastPath = path;
  }
  return lastSegs;
}

/**
 * Whether some path strictly under `dir` (a normalised workspace path, `.`
 * for the root) can match the glob: what a recursive delete or an
 * extraction there may reach. `dotOk` false: the entry right under `dir`
 * cannot start with a dot (it comes from a shell pattern like `*.o`). Sound
 * for the rules' purpose: it may say yes for a path no file has.
 * @example compileReachMatcher('.git/**')('.', true) // true
 */
export function compileReachMatcher(glob: string): (dir: string, dotOk: boolean) => boolean {
  checkLimits(glob);
  const alternatives = expandBraces(glob).map((g) => g.split('/').map((s): SegmentTest => {
    if (s === '**') return 'star';
    // `.` and `..` never name an entry of a normalised path.
    if (s === '.' || s === '..') return { test: () => false, dot: true, never: true };
    const m = compileWildcard(parseSegment(s));
    return { test: (seg: string) => m(seg), dot: s.startsWith('.') };
  }));
  return (dir, dotOk) => {
    const segs = dir === '.' ? [] : dir.split('/');
    return alternatives.some((a) => reaches(a, segs, dotOk));
  };
}

type SegmentTest = 'star' | { test: (seg: string) => boolean; dot: boolean; never?: boolean };

/** NFA walk over the directory's segments; then one more segment must be possible. */
function reaches(glob: readonly SegmentTest[], dir: readonly string[], dotOk: boolean): boolean {
  let states = closure(glob, new Set([0]));
  for (const seg of dir) {
    const next = new Set<number>();
    for (const j of states) {
      const g = glob[j];
      if (g === undefined) continue;
      if (g === 'star') next.add(j);
      else if (g.test(seg)) next.add(j + 1);
    }
    states = closure(glob, next);
    if (states.size === 0) return false;
  }
  for (const j of states) {
    const g = glob[j];
    if (g === 'star' || (g !== undefined && g.never !== true && (dotOk || !g.dot))) return true;
  }
  return false;
}

/** `**` may match zero segments: its state also stands for the next one. */
function closure(glob: readonly SegmentTest[], states: Set<number>): Set<number> {
  for (const j of states) if (glob[j] === 'star') states.add(j + 1);
  return states;
}

/** Characters to compile once `{a,b}` alternatives are expanded (for budgets); 0 when the glob is refused anyway. */
export function expandedGlobChars(glob: string): number {
  try {
    checkLimits(glob);
    return expandBraces(glob).reduce((n, g) => n + g.length, 0);
  } catch (err) {
    if (err instanceof GlobError) return 0;
    throw err;
  }
}

/** Segments become elements of the outer match: `**` a star, others a literal or a per-segment matcher. */
function compileAlternative(glob: string): (segs: readonly string[]) => boolean {
  return compileWildcard(glob.split('/').map((s): Element => {
    if (s === '**') return 'star';
    const inner = parseSegment(s);
    if (inner.every((e) => e !== 'star' && 'key' in e)) return { key: inner.map((e) => (e as { key: string }).key).join('') };
    const m = compileWildcard(inner);
    return { test: (seg: string) => m(seg) };
  }));
}

function checkLimits(glob: string): void {
  if (glob.length > MAX_GLOB_LENGTH) throw new GlobError(`glob is ${glob.length} characters long (at most ${MAX_GLOB_LENGTH})`);
  let wildcards = 0;
  for (let k = 0; k < glob.length; k++) {
    const c = glob[k]!;
    if (c === '\\') k++;
    else if (c === '?' || c === '[') wildcards++;
    else if (c === '*') {
      wildcards++;
      while (glob[k + 1] === '*') k++;
    }
  }
  if (wildcards > MAX_GLOB_WILDCARDS) throw new GlobError(`glob has ${wildcards} wildcards (at most ${MAX_GLOB_WILDCARDS})`);
}

/** `a{b,c{d,e}}f` → abf, acdf, acef. Unbalanced braces stay literal. */
function expandBraces(glob: string): string[] {
  let out = [glob];
  for (let round = 0; round < MAX_BRACE_EXPANSIONS; round++) {
    const next: string[] = [];
    let changed = false;
    for (const g of out) {
      const alts = expandFirst(g);
      if (alts) changed = true;
      next.push(...(alts ?? [g]));
      if (next.length > MAX_BRACE_EXPANSIONS) throw new GlobError(`glob expands to more than ${MAX_BRACE_EXPANSIONS} alternatives`);
    }
    out = next;
    if (!changed) return out;
  }
  return out;
}

/** Expands the first innermost `{…,…}` group, or returns null when there is none. */
function expandFirst(g: string): string[] | null {
  let open = -1;
  for (let k = 0; k < g.length; k++) {
    const c = g[k];
    if (c === '\\') { k++; continue; }
    if (c === '{') open = k;
    else if (c === '}' && open >= 0) {
      const body = g.slice(open + 1, k);
      const parts = splitTopCommas(body);
      if (parts.length < 2) { open = -1; continue; }
      return parts.map((p) => g.slice(0, open) + p + g.slice(k + 1));
    }
  }
  return null;
}

function splitTopCommas(body: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let k = 0; k < body.length; k++) {
    if (body[k] === '\\') { k++; continue; }
    if (body[k] === ',') { parts.push(body.slice(start, k)); start = k + 1; }
  }
  parts.push(body.slice(start));
  return parts;
}

function parseSegment(s: string): Element[] {
  const out: Element[] = [];
  for (let k = 0; k < s.length; k++) {
    const c = s[k]!;
    if (c === '\\' && k + 1 < s.length) out.push({ key: s[++k]! });
    else if (c === '?') out.push({ test: () => true });
    else if (c === '*') {
      if (out.at(-1) !== 'star') out.push('star');
    } else if (c === '[') {
      const cls = parseClass(s, k);
      if (cls) { out.push({ test: cls.test }); k = cls.end; } else out.push({ key: c });
    } else out.push({ key: c });
  }
  return out;
}

function parseClass(s: string, open: number): { test: (c: string) => boolean; end: number } | null {
  let k = open + 1;
  const neg = s[k] === '!' || s[k] === '^';
  if (neg) k++;
  let set = '';
  const ranges: [string, string][] = [];
  for (let first = true; k < s.length; k++, first = false) {
    const c = s[k]!;
    if (c === ']' && !first) {
      const test = (ch: string) => (set.includes(ch) || ranges.some(([lo, hi]) => ch >= lo && ch <= hi)) !== neg;
      return { test, end: k };
    }
    const lit = c === '\\' && k + 1 < s.length ? s[++k]! : c;
    if (s[k + 1] === '-' && k + 2 < s.length && s[k + 2] !== ']') {
      ranges.push([lit, s[k + 2]!]);
      k += 2;
    } else set += lit;
  }
  return null; // no closing bracket: a literal `[`
}
