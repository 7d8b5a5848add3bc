// Command rules (POLICY.md §2, §6): an argv prefix of the simple commands a
// script runs, with `except` patterns that never match. Patterns compile once
// at load time to token sets, so matching an argv is lookups only.
import { ASSIGNMENT_REASON, scriptTooLarge, splitScript } from '../shell-split.ts';
import type { RuleInput } from '../schema.ts';
import type { Example, ExceptInput, Fail, RuleHead, RuleKind } from './kind.ts';

/** One position of an argv prefix: any token, or one of a set of literals. */
export type PatternToken = { any: true } | { any: false; alts: ReadonlySet<string> };
export type CommandPattern = readonly PatternToken[];

export type CommandRule = RuleHead & {
  kind: 'command';
  /** Absent: the rule matches every command of its tools. */
  pattern: CommandPattern | undefined;
  except: readonly CommandPattern[];
};

const LITERAL_STAR = '\\*';

/**
 * `"*"` is any one token; `"\\*"` (YAML `'\*'`) is a literal `*` argument, as in
 * `rm -rf -- *`, which no other spelling can name.
 */
function compilePattern(raw: readonly (string | readonly string[])[]): CommandPattern {
  return raw.map((t): PatternToken => {
    const alts = typeof t === 'string' ? [t] : t;
    return alts.includes('*') ? { any: true } : { any: false, alts: new Set(alts.map((a) => (a === LITERAL_STAR ? '*' : a))) };
  });
}

/**
 * Argv-prefix match. `loose` also lets a path-qualified program
 * (`/usr/bin/curl`) match by its base name: used for forbid and prompt rules
 * only, so a path never slips past a restriction but never earns an allow.
 */
function patternMatches(p: CommandPattern, argv: readonly string[], loose: boolean): boolean {
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

function matches(r: CommandRule, argv: readonly string[]): boolean {
  const loose = r.decision !== 'allow';
  if (r.pattern && !patternMatches(r.pattern, argv, loose)) return false;
  for (const e of r.except) if (patternMatches(e, argv, loose)) return false;
  return true;
}

/** Length of the literal prefix a rule matched, for session grants; 0 when it has none. */
export function prefixLength(r: CommandRule): number {
  return r.pattern?.length ?? 0;
}

const listsOnly = (k: number): string => `except[${k}]: bash rules take argv patterns (lists), got a string`;

function refuseExcept(entry: ExceptInput, k: number): string | undefined {
  return typeof entry === 'string' ? listsOnly(k) : undefined;
}

function compile(head: RuleHead, input: RuleInput, fail: Fail): CommandRule {
  const except: CommandPattern[] = [];
  for (const [k, e] of (input.except ?? []).entries()) {
    if (typeof e === 'string') fail(listsOnly(k));
    else except.push(compilePattern(e));
  }
  const { id, layer, file, index, tools, decision, justification, appliesTo } = head;
  // One literal, not a spread of `head`: every field stays in the object, a load away on the hot path.
  return { kind: 'command', id, layer, file, index, tools, decision, justification, appliesTo, pattern: input.command ? compilePattern(input.command) : undefined, except };
}

/**
 * A list is an argv; a string is one simple command split with shell quoting
 * (POLICY.md §6). `NAME=value cmd` is one simple command in shell terms; the
 * engine shows it to rules as `cmd` and as `env NAME=value cmd` (policy.ts),
 * and so do examples.
 */
function matchesExample(rule: CommandRule, ex: Example, fail: Fail): boolean {
  if (typeof ex !== 'string') return matches(rule, ex);
  const shown = JSON.stringify(ex);
  const big = scriptTooLarge(ex);
  if (big !== undefined) fail(`example ${shown.slice(0, 60)}…: ${big}`);
  const split = splitScript(ex);
  const one = split.simple.length === 1 ? split.simple[0]! : undefined;
  const assignedOnly = one !== undefined && one.assigns.length > 0 && one.argv.length > 0 && split.complex?.startsWith(ASSIGNMENT_REASON);
  if (assignedOnly) return matches(rule, one.argv) || matches(rule, ['env', ...one.assigns, ...one.argv]);
  if (split.complex !== undefined || split.commands.length !== 1) {
    fail(`example ${shown} is not one simple command${split.complex ? ` (${split.complex})` : ''}`);
  }
  return matches(rule, split.commands[0]!);
}

export const COMMAND_RULES: RuleKind<CommandRule, readonly string[]> = {
  kind: 'command',
  field: 'command',
  otherFields: [],
  judged: 'script',
  otherTools: '`command` applies to bash only; file tools take `path`',
  refuseExcept,
  compile,
  matches,
  matchesExample,
};
