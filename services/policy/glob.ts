// Path globs of POLICY.md §6, matched in linear-bounded time (§7 "Glob
// matching is linear"). picomatch compiles globs to backtracking regular
// expressions: `*a*a*a*a*a*a*a*c` against a 120-character path ran for
// minutes on the event loop. Here a glob is a list of segments matched with
// the classic two-pointer wildcard walk, once over the segments (`**`) and
// once within a segment (`*`): it backtracks only to the last star, so a
// match costs at most O(path × glob) steps, never exponential.
//
// Supported: `**` (zero or more segments; inside a segment it is `*`), `*`
// and `?` (within a segment, dotfiles included), `[abc]`, `[a-z]`, `[!x]`
// / `[^x]`, `{a,b}` alternatives and `\` escapes. Case-sensitive.

/** Limits of §7: a glob over them is a load error. */
export const MAX_GLOB_LENGTH = 512;
export const MAX_GLOB_WILDCARDS = 16;
/** `{a,b}{c,d}…` multiplies; more alternatives than this is a load error. */
const MAX_BRACE_EXPANSIONS = 64;

export class GlobError extends Error {}

type Atom = { kind: 'char'; c: string } | { kind: 'any' } | { kind: 'star' } | { kind: 'class'; neg: boolean; set: string; ranges: [string, string][] };
type Segment = { kind: 'globstar' } | { kind: 'seg'; atoms: Atom[] };

/**
 * @throws GlobError naming the limit or the syntax problem
 * @example compileGlobMatcher('docs/**\/*.md')('docs/a/b.md') // true
 */
export function compileGlobMatcher(glob: string): (path: string) => boolean {
  checkLimits(glob);
  const alternatives = expandBraces(glob).map(parseGlob);
  return (path) => {
    const segs = path.split('/');
    return alternatives.some((p) => matchSegments(p, segs));
  };
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

function parseGlob(glob: string): Segment[] {
  return glob.split('/').map((s): Segment => (s === '**' ? { kind: 'globstar' } : { kind: 'seg', atoms: parseSegment(s) }));
}

function parseSegment(s: string): Atom[] {
  const atoms: Atom[] = [];
  for (let k = 0; k < s.length; k++) {
    const c = s[k]!;
    if (c === '\\' && k + 1 < s.length) atoms.push({ kind: 'char', c: s[++k]! });
    else if (c === '?') atoms.push({ kind: 'any' });
    else if (c === '*') {
      if (atoms.at(-1)?.kind !== 'star') atoms.push({ kind: 'star' });
    } else if (c === '[') {
      const cls = parseClass(s, k);
      if (cls) { atoms.push(cls.atom); k = cls.end; } else atoms.push({ kind: 'char', c });
    } else atoms.push({ kind: 'char', c });
  }
  return atoms;
}

function parseClass(s: string, open: number): { atom: Atom; end: number } | null {
  let k = open + 1;
  const neg = s[k] === '!' || s[k] === '^';
  if (neg) k++;
  let set = '';
  const ranges: [string, string][] = [];
  for (let first = true; k < s.length; k++, first = false) {
    const c = s[k]!;
    if (c === ']' && !first) return { atom: { kind: 'class', neg, set, ranges }, end: k };
    const lit = c === '\\' && k + 1 < s.length ? s[++k]! : c;
    if (s[k + 1] === '-' && k + 2 < s.length && s[k + 2] !== ']') {
      ranges.push([lit, s[k + 2]!]);
      k += 2;
    } else set += lit;
  }
  return null; // no closing bracket: a literal `[`
}

function atomMatches(a: Atom, c: string): boolean {
  switch (a.kind) {
    case 'char': return a.c === c;
    case 'any': return true;
    case 'star': return false;
    case 'class': {
      const hit = a.set.includes(c) || a.ranges.some(([lo, hi]) => c >= lo && c <= hi);
      return hit !== a.neg;
    }
  }
}

/**
 * The two-pointer wildcard walk, generic over what one element is: `isStar`
 * elements match any run of text items, the others exactly one. On a
 * mismatch it returns to the last star only, which bounds the work by
 * text × pattern.
 */
function walk<P, T>(pat: readonly P[], text: readonly T[] | string, isStar: (p: P) => boolean, one: (p: P, t: T) => boolean): boolean {
  let i = 0;
  let j = 0;
  let starJ = -1;
  let starI = 0;
  const n = text.length;
  while (i < n) {
    const p = pat[j];
    if (p !== undefined && !isStar(p) && one(p, text[i] as T)) { i++; j++; continue; }
    if (p !== undefined && isStar(p)) { starJ = j++; starI = i; continue; }
    if (starJ < 0) return false;
    j = starJ + 1;
    i = ++starI;
  }
  while (j < pat.length && isStar(pat[j]!)) j++;
  return j === pat.length;
}

const isStarAtom = (a: Atom) => a.kind === 'star';
const isGlobstar = (s: Segment) => s.kind === 'globstar';

function segmentMatches(s: Segment, seg: string): boolean {
  return s.kind === 'seg' && walk(s.atoms, seg, isStarAtom, atomMatches);
}

function matchSegments(pattern: readonly Segment[], segs: readonly string[]): boolean {
  return walk(pattern, segs, isGlobstar, segmentMatches);
}
