// Path rules (POLICY.md §2, §6): globs over the workspace paths the file
// tools touch (`path`, and `dest` for copy), with `except` globs that never
// match. Globs compile once at load time to linear-time matchers (glob.ts).
import { compileGlobMatcher, compileReachMatcher, GlobError } from '../glob.ts';
import { normalizeWorkspacePath } from '../path.ts';
import type { RuleInput } from '../schema.ts';
import type { Example, ExceptInput, Fail, RuleHead, RuleKind } from './kind.ts';

export type PathMatcher = {
  glob: string;
  test: (path: string) => boolean;
  /** Some path strictly under a directory may match (glob.ts compileReachMatcher). */
  reaches: (dir: string, dotOk: boolean) => boolean;
};

export type PathRule = RuleHead & {
  kind: 'path';
  /** Absent: the rule matches every path of its tools. */
  globs: readonly PathMatcher[] | undefined;
  except: readonly PathMatcher[];
};

/**
 * `**` spans zero or more segments, `*` and `?` stay within one, dotfiles
 * match, case matters; `dir/**` matches `dir` itself, so `.git/**` protects
 * the `.git` entry too. Linear-bounded matching (glob.ts).
 * @throws GlobError for a glob over the §7 limits
 */
function compileGlob(glob: string): PathMatcher {
  const test = compileGlobMatcher(glob);
  // The workspace root "." is zero segments: only `**`-only globs (or ".") reach it.
  const root = glob === '.' || /^\*\*(\/\*\*)*$/.test(glob);
  const reach = glob === '.' ? () => false : compileReachMatcher(glob);
  return { glob, test: (p) => (p === '.' ? root : test(p)), reaches: reach };
}

/** `path` is already normalised (see path.ts). */
function matches(r: PathRule, path: string): boolean {
  if (r.globs && !r.globs.some((m) => m.test(path))) return false;
  for (const e of r.except) if (e.test(path)) return false;
  return true;
}

/**
 * Some path strictly under `dir` may match the rule (op-match.ts). Excepts
 * are ignored: a rule with an exception under the path may still reach other
 * entries there.
 */
export function pathRuleReaches(r: PathRule, dir: string, dotOk: boolean): boolean {
  return r.globs === undefined || r.globs.some((m) => m.reaches(dir, dotOk));
}

const globsOnly = (k: number): string => `except[${k}]: file rules take globs (strings), got a list`;

function refuseExcept(entry: ExceptInput, k: number): string | undefined {
  return typeof entry === 'string' ? undefined : globsOnly(k);
}

function compile(head: RuleHead, input: RuleInput, fail: Fail): PathRule {
  // Excepts first: their errors come before those of `path` (as they always have).
  const except: PathMatcher[] = [];
  for (const [k, e] of (input.except ?? []).entries()) {
    if (typeof e === 'string') except.push(globOf(e, fail));
    else fail(globsOnly(k));
  }
  const globs = input.path === undefined ? undefined : typeof input.path === 'string' ? [input.path] : input.path;
  const { id, layer, file, index, tools, decision, justification, appliesTo } = head;
  // One literal, not a spread of `head`: every field stays in the object, a load away on the hot path.
  return { kind: 'path', id, layer, file, index, tools, decision, justification, appliesTo, globs: globs?.map((g) => globOf(g, fail)), except };
}

function globOf(glob: string, fail: Fail): PathMatcher {
  try {
    return compileGlob(normalizeGlob(glob, fail));
  } catch (err) {
    if (err instanceof GlobError) return fail(`path glob ${JSON.stringify(glob.length > 80 ? `${glob.slice(0, 80)}…` : glob)}: ${err.message}`);
    throw err;
  }
}

/** Globs are workspace-relative; `./x` and `/workspace/x` are accepted spellings of `x`. */
function normalizeGlob(glob: string, fail: Fail): string {
  let g = glob;
  if (g === '/workspace' || g.startsWith('/workspace/')) g = g.slice('/workspace/'.length) || '**';
  else if (g.startsWith('/')) fail(`path glob ${JSON.stringify(glob)} is outside the workspace (globs are relative to it)`);
  while (g.startsWith('./')) g = g.slice(2);
  g = g.replace(/\/{2,}/g, '/');
  if (g.split('/').includes('..')) fail(`path glob ${JSON.stringify(glob)} must not contain '..'`);
  return g;
}

/** A path example is a string, normalised as the engine normalises a tool's path (path.ts). */
function matchesExample(rule: PathRule, ex: Example, fail: Fail): boolean {
  const shown = JSON.stringify(ex);
  if (typeof ex !== 'string') return fail(`example ${shown}: file rules take path examples (strings)`);
  const p = normalizeWorkspacePath(ex);
  if (!p.ok) return fail(`example ${shown}: ${p.reason}`);
  return matches(rule, p.path);
}

export const PATH_RULES: RuleKind<PathRule, string> = {
  kind: 'path',
  field: 'path',
  otherFields: [],
  judged: 'paths',
  otherTools: '`path` applies to file tools only; bash takes `command`',
  refuseExcept,
  compile,
  matches,
  matchesExample,
};
