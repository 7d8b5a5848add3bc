// One compiled rule and how it matches. Rules are compiled once at load time
// (globs to regexes, patterns to token sets) so evaluation is lookups only.
import type { ToolName } from '../protocol/index.ts';
import type { Decision } from './decision.ts';
import { compileGlobMatcher, compileReachMatcher } from './glob.ts';

export type Layer = 'global' | 'project' | 'session';

/** One position of an argv prefix: any token, or one of a set of literals. */
export type PatternToken = { any: true } | { any: false; alts: ReadonlySet<string> };
export type CommandPattern = readonly PatternToken[];
export type PathMatcher = {
  glob: string;
  test: (path: string) => boolean;
  /** Some path strictly under a directory may match (glob.ts compileReachMatcher). */
  reaches: (dir: string, dotOk: boolean) => boolean;
};

export type Rule = {
  id: string;
  layer: Layer;
  /** File the rule came from, and its index there: for messages. */
  file: string;
  index: number;
  tools: ReadonlySet<ToolName>;
  decision: Decision;
  justification: string;
  /** Absent: the rule matches every command of its tools. */
  command?: CommandPattern;
  commandExcept: readonly CommandPattern[];
  path?: readonly PathMatcher[];
  pathExcept: readonly PathMatcher[];
};

/**
 * `"*"` is any one token; `"\\*"` (YAML `'\*'`) is a literal `*` argument, as in
 * `rm -rf -- *`, which no other spelling can name.
 */
export function compilePattern(raw: readonly (string | readonly string[])[]): CommandPattern {
  return raw.map((t): PatternToken => {
    const alts = typeof t === 'string' ? [t] : t;
    return alts.includes('*') ? { any: true } : { any: false, alts: new Set(alts.map((a) => (a === LITERAL_STAR ? '*' : a))) };
  });
}

const LITERAL_STAR = '\\*';

/**
 * Argv-prefix match. `loose` also lets a path-qualified program
 * (`/usr/bin/curl`) match by its base name: used for forbid and prompt rules
 * only, so a path never slips past a restriction but never earns an allow.
 */
export function patternMatches(p: CommandPattern, argv: readonly string[], loose: boolean): boolean {
  if (argv.length < p.length) return false;
  for (let k = 0; k < p.length; k++) {
    const t = p[k]!;
    if (t.any) continue;
    const a = argv[k]!;
    if (t.alts.has(a)) continue;
    if (k === 0 && loose) {
      const slash = a.lastIndexOf('/');
      if (slash >= 0 && t.alts.has(a.slice(slash + 1))) continue;
    }
    return false;
  }
  return true;
}

export function ruleMatchesArgv(r: Rule, argv: readonly string[]): boolean {
  const loose = r.decision !== 'allow';
  if (r.command && !patternMatches(r.command, argv, loose)) return false;
  for (const e of r.commandExcept) if (patternMatches(e, argv, loose)) return false;
  return true;
}

/** `path` is already normalised (see path.ts). */
export function ruleMatchesPath(r: Rule, path: string): boolean {
  if (r.path && !r.path.some((m) => m.test(path))) return false;
  for (const e of r.pathExcept) if (e.test(path)) return false;
  return true;
}

/** Length of the literal prefix a rule matched, for session grants; 0 when it has none. */
export function prefixLength(r: Rule): number {
  return r.command?.length ?? 0;
}

/**
 * `**` spans zero or more segments, `*` and `?` stay within one, dotfiles
 * match, case matters; `dir/**` matches `dir` itself, so `.git/**` protects
 * the `.git` entry too. Linear-bounded matching (glob.ts).
 * @throws GlobError for a glob over the §7 limits
 */
export function compileGlob(glob: string): PathMatcher {
  const test = compileGlobMatcher(glob);
  // The workspace root "." is zero segments: only `**`-only globs (or ".") reach it.
  const root = glob === '.' || /^\*\*(\/\*\*)*$/.test(glob);
  const reach = glob === '.' ? () => false : compileReachMatcher(glob);
  return { glob, test: (p) => (p === '.' ? root : test(p)), reaches: reach };
}
