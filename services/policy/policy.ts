// evaluate(): one command against the layered policy (POLICY.md §1, §3, §6).
// Pure and synchronous. Every verdict carries the rules that matched and a
// reason naming what decided it, so the ledger and the API can say why.
import type { Command, ToolName } from '../protocol/command.ts';
import { rank, stricter, type Decision } from './decision.ts';
import type { PolicyLayers } from './layers.ts';
import { normalizeWorkspacePath } from './path.ts';
import { prefixLength, type Layer, type Rule } from './rule.ts';
import type { DefaultKey } from './schema.ts';
import { splitScript } from './shell-split.ts';
import { innerCommands } from './wrappers.ts';

export type MatchedRule = {
  id: string;
  layer: Layer | 'builtin';
  decision: Decision;
  justification: string;
};
export type Evaluation = { decision: Decision; matched_rules: MatchedRule[]; reason: string };

/** A session grant from `approve_for_session` (POLICY.md §5). */
export type Grant = { tool: ToolName; prefix?: string[]; path?: string; dest?: string };

/** What one checked part (a simple command, or a path of a file tool) came to. */
export type Part = {
  decision: Decision;
  /** bash: the argv; file tools: the normalised path and which field it was. */
  argv?: string[];
  path?: string;
  field?: 'path' | 'dest';
  /** The rule that decided this part, absent when a default did. */
  rule?: Rule;
  /** Longest literal prefix among the prompt rules of this part (0: none). */
  promptPrefix: number;
  granted: boolean;
};
export type EvaluationDetail = { tool: ToolName; complex?: string; parts: Part[] };

// Details ride on the evaluation under a non-enumerable symbol: invisible to
// JSON, the ledger, spreads and equality checks, but there for grantFor() and
// decideApproval() on the same object. (A WeakMap side table cost a third of
// the evaluation time in GC work; see bench/policy.)
const DETAIL = Symbol('policy.evaluationDetail');

export function detailOf(e: Evaluation): EvaluationDetail | undefined {
  return (e as { [DETAIL]?: EvaluationDetail })[DETAIL];
}

function attach(e: Evaluation, d: EvaluationDetail): Evaluation {
  Object.defineProperty(e, DETAIL, { value: d, enumerable: false });
  return e;
}

export function evaluate(layers: PolicyLayers, command: Command, grants: readonly Grant[] = []): Evaluation {
  return command.tool === 'bash' ? evaluateBash(layers, command, grants) : evaluateFile(layers, command, grants);
}

function evaluateBash(layers: PolicyLayers, command: Command, grants: readonly Grant[]): Evaluation {
  const split = splitScript(command.cmd ?? '');
  const matched = new Set<Rule>();
  const parts: Part[] = [];
  if (split.complex !== undefined) {
    // Complex: rules can only restrict. Start from the complex_command default;
    // allow rules that match a readable command are listed (every matching
    // rule is) but cannot lower the decision.
    const dflt = layers.defaultFor('complex_command');
    let decision = dflt.decision;
    const hits: { rule: Rule; argv: string[] }[] = [];
    for (const argv of split.commands) {
      for (const r of [...layers.matchArgv(argv), ...wrappedRestrictions(layers, argv)]) {
        matched.add(r);
        if (r.decision === 'allow') continue;
        hits.push({ rule: r, argv });
        decision = stricter(decision, r.decision);
      }
    }
    const decisive = hits.find((h) => h.rule.decision === decision);
    parts.push({ decision, promptPrefix: 0, granted: false });
    const why = decisive
      ? ruleReason(decisive.rule, show(decisive.argv))
      : `complex_command default (${defaultSource(dflt.layer)}): ${decision}`;
    return finish(layers, { tool: 'bash', complex: split.complex, parts }, matched, `complex script (${split.complex}); ${why}`);
  }
  for (const argv of split.commands) {
    const rules = layers.matchArgv(argv);
    const inner = wrappedRestrictions(layers, argv);
    for (const r of rules) matched.add(r);
    for (const r of inner) matched.add(r);
    parts.push(partFrom(layers, 'bash', rules, { argv }, grants, inner));
  }
  if (parts.length === 0) {
    const d = layers.defaultFor('bash');
    return finish(layers, { tool: 'bash', parts }, matched, `empty script; bash default (${defaultSource(d.layer)}): ${d.decision}`, d.decision);
  }
  return finish(layers, { tool: 'bash', parts }, matched);
}

function evaluateFile(layers: PolicyLayers, command: Command, grants: readonly Grant[]): Evaluation {
  const targets: ['path' | 'dest', string | undefined][] = [['path', command.path]];
  if (command.tool === 'copy') targets.push(['dest', command.dest]);
  const matched = new Set<Rule>();
  const parts: Part[] = [];
  for (const [field, raw] of targets) {
    if (raw === undefined) return refuse(command.tool, `missing_${field}: ${command.tool} needs a ${field}`);
    const n = normalizeWorkspacePath(raw);
    // Hard invariant: checked before any rule is read (POLICY.md §1).
    if (!n.ok) return refuse(command.tool, `${n.reason} (${field})`);
    const rules = layers.matchPath(command.tool, n.path);
    for (const r of rules) matched.add(r);
    parts.push(partFrom(layers, command.tool, rules, { path: n.path, field }, []));
  }
  const grant = grants.find((g) => fileGrantCovers(g, command.tool, parts));
  if (grant) for (const p of parts) if (p.decision === 'prompt') p.granted = true;
  return finish(layers, { tool: command.tool, parts }, matched);
}

function partFrom(
  layers: PolicyLayers,
  tool: ToolName,
  rules: Rule[],
  where: { argv?: string[]; path?: string; field?: 'path' | 'dest' },
  grants: readonly Grant[],
  inner: readonly Rule[] = [],
): Part {
  let rule: Rule | undefined;
  let promptPrefix = 0;
  for (const r of rules) {
    if (rule === undefined || rank(r.decision) > rank(rule.decision)) rule = r;
    // Only the command's own rules give a grant prefix: an inner rule's
    // prefix would not line up with this argv.
    if (r.decision === 'prompt') promptPrefix = Math.max(promptPrefix, prefixLength(r));
  }
  for (const r of inner) if (rule === undefined || rank(r.decision) > rank(rule.decision)) rule = r;
  const decision = rule?.decision ?? layers.defaultFor(tool).decision;
  const part: Part = { decision, rule, promptPrefix, granted: false, ...where };
  if (decision === 'prompt' && where.argv) part.granted = grants.some((g) => bashGrantCovers(g, where.argv!));
  return part;
}

function finish(layers: PolicyLayers, detail: EvaluationDetail, matched: Set<Rule>, reason?: string, fixed?: Decision): Evaluation {
  let decision: Decision | undefined;
  let decisive: Part | undefined;
  for (const p of detail.parts) {
    // A grant satisfies a prompt, never a forbid (POLICY.md §5).
    const d = p.granted && p.decision === 'prompt' ? 'allow' : p.decision;
    if (decision === undefined || rank(d) > rank(decision)) {
      decision = d;
      decisive = p;
    }
  }
  decision = fixed ?? decision ?? 'allow';
  const e: Evaluation = {
    decision,
    matched_rules: layers
      .sort(matched)
      .map((r) => ({ id: r.id, layer: r.layer, decision: r.decision, justification: r.justification })),
    reason: reason ?? partReason(layers, detail, decisive!, decision),
  };
  return attach(e, detail);
}

/** forbid/prompt rules of the commands a wrapper runs (wrappers.ts), not already matched by argv itself. */
function wrappedRestrictions(layers: PolicyLayers, argv: readonly string[]): Rule[] {
  const inner = innerCommands(argv);
  if (inner.length === 0) return [];
  const own = layers.matchArgv(argv);
  const out = new Set<Rule>();
  for (const a of inner) for (const r of layers.matchArgv(a)) if (r.decision !== 'allow' && !own.includes(r)) out.add(r);
  return layers.sort(out);
}

function partReason(layers: PolicyLayers, detail: EvaluationDetail, p: Part, decision: Decision): string {
  // Built only for the deciding part: formatting every part is measurable.
  const subject = p.argv ? show(p.argv) : `${detail.tool} ${p.field ?? 'path'} ${p.path ?? ''}`;
  if (p.granted && p.decision === 'prompt' && decision === 'allow') return `prompt for ${subject} satisfied by a session grant`;
  if (p.rule) return ruleReason(p.rule, subject);
  const key: DefaultKey = detail.tool;
  const d = layers.defaultFor(key);
  return `no rule matched ${subject}; ${key} default (${defaultSource(d.layer)}): ${p.decision}`;
}

function ruleReason(r: Rule, subject: string): string {
  return `${r.decision} by rule ${r.id} (${r.layer}) for ${subject}${r.justification ? `: ${r.justification}` : ''}`;
}

function defaultSource(layer: Layer | 'builtin'): string {
  return layer === 'builtin' ? 'built-in' : `${layer} layer`;
}

function refuse(tool: ToolName, reason: string): Evaluation {
  const e: Evaluation = { decision: 'forbid', matched_rules: [], reason };
  return attach(e, { tool, parts: [] });
}

function show(argv: readonly string[]): string {
  return '`' + argv.join(' ') + '`';
}

export function bashGrantCovers(g: Grant, argv: readonly string[]): boolean {
  if (g.tool !== 'bash' || !g.prefix || g.prefix.length === 0 || argv.length < g.prefix.length) return false;
  return g.prefix.every((t, k) => argv[k] === t);
}

function fileGrantCovers(g: Grant, tool: ToolName, parts: readonly Part[]): boolean {
  if (g.tool !== tool || g.path === undefined || parts[0]?.path !== g.path) return false;
  return g.dest === undefined ? tool !== 'copy' : parts[1]?.path === g.dest;
}
