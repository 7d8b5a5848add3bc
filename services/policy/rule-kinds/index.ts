// The rule kinds, and which one a policy file rule is. A rule naming a kind's
// fields (`command`; `path`; `host`, `cidr`, `port`) is of that kind; a rule
// naming none is of the kind that judges its tools, by their descriptors
// (protocol/tools.ts `judged`; `tool: network` judges connections). A kind is one file (kind.ts says what it provides) plus its
// entry in RULE_KINDS; `Rule` follows from the list.
import { TOOLS, type ToolName } from '../../protocol/index.ts';
import type { Decision } from '../decision.ts';
import { APPLIES_TO, NETWORK, RULE_TOOLS, type RuleInput, type RuleTool } from '../schema.ts';
import { COMMAND_RULES } from './command-rule.ts';
import type { Fail, Judged, Layer, RuleHead, RuleKind } from './kind.ts';
import { NETWORK_RULES } from './network-rule.ts';
import { PATH_RULES } from './path-rule.ts';

/** Registration order: a rule of several kinds checks its examples with the first of them. */
export const RULE_KINDS = [COMMAND_RULES, PATH_RULES, NETWORK_RULES] as const;

/** How a tool a rule names is judged. */
export function judgedOf(t: RuleTool): Judged {
  return t === NETWORK ? 'connections' : TOOLS[t].judged;
}

/** A compiled rule: narrow on `kind` to reach its own fields. */
export type Rule = ReturnType<(typeof RULE_KINDS)[number]['compile']>;
type AnyKind = RuleKind<Rule, never>;

/** Where a rule comes from: its file, index there and layer. */
export type RuleSource = { file: string; index: number; layer: Layer };

/**
 * The validated input as compiled rules, its `examples` checked. One rule
 * mostly; a rule with neither field whose tools are judged in different ways
 * (`tool: [bash, write]`: every command and every write) is one rule of each
 * kind, which share the id, file and index, and are reported as one.
 * @param fail stops loading with the rule named (errors.ts ruleError)
 */
export function compileRule(at: RuleSource, input: RuleInput, fail: Fail): Rule[] {
  const { tools, kinds } = kindsOf(input, fail);
  if (kinds.length > 1) {
    // Every `except` entry is of some kind's shape but not of all of them.
    for (const [k, entry] of (input.except ?? []).entries()) {
      for (const kind of kinds) {
        const why = kind.refuseExcept(entry, k);
        if (why !== undefined) fail(why);
      }
    }
  }
  const appliesTo = new Set(input.applies_to ?? APPLIES_TO);
  if (!appliesTo.has('commands') && !tools.includes('write')) {
    fail('applies_to: [seeded_files] needs `write` among its tools (seeded and uploaded files are judged as writes)');
  }
  const rules = kinds.map((kind) => {
    const head: RuleHead = {
      id: input.id,
      layer: at.layer,
      file: at.file,
      index: at.index,
      tools: new Set(tools.filter((t): t is ToolName => t !== NETWORK && TOOLS[t].judged === kind.judged)),
      decision: input.decision as Decision,
      justification: input.justification ?? '',
      appliesTo,
    };
    return kind.compile(head, input, fail);
  });
  checkExamples(kinds[0]!, rules[0]!, input, fail);
  return rules;
}

/** The first of a kind's fields the rule names, if any. */
function fieldIn(input: RuleInput, k: AnyKind): string | undefined {
  return [k.field, ...k.otherFields].find((f) => input[f] !== undefined);
}

function kindsOf(input: RuleInput, fail: Fail): { tools: readonly RuleTool[]; kinds: readonly AnyKind[] } {
  const named = RULE_KINDS.filter((k) => fieldIn(input, k) !== undefined);
  if (named.length > 1) fail(`a rule has ${named.map((k) => `\`${fieldIn(input, k)}\``).join(' or ')}, not both`);
  const own: AnyKind | undefined = named[0];
  // Without `tool`, a kind's field means every tool that kind judges.
  const tools: readonly RuleTool[] =
    input.tool === undefined
      ? own
        ? RULE_TOOLS.filter((t) => judgedOf(t) === own.judged)
        : fail('a rule needs `tool`, `command` or `path` (network rules: `host` or `cidr`)')
      : typeof input.tool === 'string'
        ? [input.tool]
        : input.tool;
  if (own === undefined) return { tools, kinds: RULE_KINDS.filter((k) => tools.some((t) => judgedOf(t) === k.judged)) };
  const stray = tools.find((t) => judgedOf(t) !== own.judged);
  if (stray === NETWORK) fail(`\`${fieldIn(input, own)}\` does not apply to \`tool: network\`; network rules take \`host\`, \`port\` and \`cidr\``);
  if (stray !== undefined) fail(own.otherTools);
  return { tools, kinds: [own] };
}

function checkExamples(kind: AnyKind, rule: Rule, input: RuleInput, fail: Fail): void {
  for (const ex of input.examples?.match ?? []) {
    if (!kind.matchesExample(rule, ex, fail)) fail(`example ${JSON.stringify(ex)} is listed in match but the rule does not match it`);
  }
  for (const ex of input.examples?.not_match ?? []) {
    if (kind.matchesExample(rule, ex, fail)) fail(`example ${JSON.stringify(ex)} is listed in not_match but the rule matches it`);
  }
}
