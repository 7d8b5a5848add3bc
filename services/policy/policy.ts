// evaluate(): one command against the layered policy (POLICY.md §1, §3, §6).
// Pure and synchronous. Every verdict carries the rules that matched and a
// reason naming what decided it, so the ledger and the API can say why.
import { pathFields, TOOLS, type Command, type ToolName } from '../protocol/index.ts';
import { rank, stricter, type Decision } from './decision.ts';
import type { PolicyLayers } from './layers.ts';
import type { MatchedRule } from './matched-rule.ts';
import { normalizeWorkspacePath } from './path.ts';
import { prefixLength } from './rule-kinds/command-rule.ts';
import type { Rule } from './rule-kinds/index.ts';
import type { Layer } from './rule-kinds/kind.ts';
import type { DefaultKey } from './schema.ts';
import { fileOpsOf, touchesFiles, type FileOp, type FileOps } from './redirects.ts';
import { describeOp, matchOp, unsureReason } from './op-match.ts';
import { prefixRunsAnything } from './runs-anything.ts';
import { scriptTooLarge, splitScript, type SimpleCommand, type SplitScript } from './shell-split.ts';
import { newWrapBudget, unwrap, type Unwrapped, type WrapBudget } from './wrappers.ts';
import { newBudget, spend, type Budget } from './budget.ts';

export type Evaluation = { decision: Decision; matched_rules: MatchedRule[]; reason: string };

/**
 * A session grant from `approve_for_session` (POLICY.md §5, §7). bash:
 * `argv` is an exact grant (the default), `prefix` a wider one the operator
 * chose explicitly (never for shells, interpreters or wrappers); file tools:
 * the same tool on the same path (and dest).
 */
export type Grant = { tool: ToolName; argv?: string[]; prefix?: string[]; path?: string; dest?: string };

/** What one checked part (a simple command, a path of a file tool, or a redirection target) came to. */
export type Part = {
  decision: Decision;
  /** bash: the argv; file tools: the normalised path and which field it was. */
  argv?: string[];
  path?: string;
  field?: 'path' | 'dest' | 'redirect' | 'operand';
  /** A redirection target or path argument is checked as this file tool (§7). */
  fileTool?: 'write' | 'read';
  /** A path argument's scope (redirects.ts FileOp). */
  scope?: 'tree' | 'some';
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

/** `budget`: the steps this evaluation may take (budget.ts); explainBash shares one across the parts it judges. */
export function evaluate(layers: PolicyLayers, command: Command, grants: readonly Grant[] = [], budget: Budget = newBudget()): Evaluation {
  return command.tool === 'bash' ? evaluateBash(layers, command, grants, budget) : evaluateFile(layers, command, grants);
}

/** A script read into what it runs: its simple commands, what their wrappers run, and the files its redirections touch. */
type Reading = { split: SplitScript; inner: Unwrapped[]; ops: FileOp[]; innerOps: FileOp[]; budget: WrapBudget; complex?: string };

function read(cmd: string, steps: Budget): Reading {
  const split = splitScript(cmd);
  const budget = newWrapBudget(steps);
  // Matching each simple command's argv against the rules.
  spend(steps, split.simple.length);
  const inner = split.simple.map((c) => unwrap(c.argv, budget));
  const nested = inner.flatMap((u) => u.commands);
  const outer = touchesFiles(split.simple) ? fileOpsOf(split.simple, steps) : NO_OPS;
  const all = touchesFiles(nested) ? fileOpsOf([...split.simple, ...nested], steps) : outer;
  const own = all === outer ? undefined : new Set(outer.ops.map(opKey));
  const innerOps = own === undefined ? [] : all.ops.filter((o) => !own.has(opKey(o)));
  const complex = split.complex ?? inner.find((u) => u.complex !== undefined)?.complex ?? all.complex ?? steps.over;
  return { split, inner, ops: outer.ops, innerOps, budget, complex };
}

const NO_OPS: FileOps = { ops: [] };

function opKey(o: FileOp): string {
  return `${o.tool}\0${o.path}\0${o.via ?? ''}\0${o.scope ?? ''}\0${o.dotOk === true}`;
}

function evaluateBash(layers: PolicyLayers, command: Command, grants: readonly Grant[], budget: Budget): Evaluation {
  const cmd = command.cmd ?? '';
  const big = scriptTooLarge(cmd);
  if (big !== undefined) return refuse('bash', big);
  const r = read(cmd, budget);
  const complex = r.complex ?? unsureReason(layers, r.ops) ?? unsureReason(layers, r.innerOps);
  if (complex !== undefined) return evaluateComplex(layers, r, complex);
  const matched = new Set<Rule>();
  const parts: Part[] = [];
  r.split.simple.forEach((c, k) => {
    if (c.argv.length === 0) return;
    const rules = layers.matchArgv(c.argv);
    const inner = restrictionsOf(layers, r.inner[k]!.commands, rules);
    for (const x of rules) matched.add(x);
    for (const x of inner) matched.add(x);
    parts.push(partFrom(layers, 'bash', rules, { argv: c.argv }, grants, inner));
  });
  for (const op of r.ops) {
    const rules = matchOp(layers, op).rules;
    for (const x of rules) matched.add(x);
    parts.push(partFrom(layers, op.tool, rules, opWhere(op), grants));
  }
  for (const op of r.innerOps) {
    const rules = matchOp(layers, op).rules.filter((x) => x.decision !== 'allow');
    if (rules.length === 0) continue;
    for (const x of rules) matched.add(x);
    parts.push(partFrom(layers, op.tool, rules, opWhere(op), grants));
  }
  if (parts.length === 0) {
    const d = layers.defaultFor('bash');
    return finish(layers, { tool: 'bash', parts }, matched, `empty script; bash default (${defaultSource(d.layer)}): ${d.decision}`, d.decision);
  }
  return finish(layers, { tool: 'bash', parts }, matched);
}

/**
 * Complex: rules can only restrict (§6). Start from the complex_command
 * default; allow rules that match a readable command are listed (every
 * matching rule is) but cannot lower the decision. Leading assignments are
 * also shown to rules as `env NAME=value … cmd`, the spelling rules about
 * `env` already cover.
 */
function evaluateComplex(layers: PolicyLayers, r: Reading, why: string): Evaluation {
  const dflt = layers.defaultFor('complex_command');
  const matched = new Set<Rule>();
  let decision = dflt.decision;
  let decisive: { rule: Rule; subject: string } | undefined;
  const hit = (rule: Rule, subject: string) => {
    matched.add(rule);
    if (rule.decision === 'allow') return;
    if (rank(rule.decision) > rank(decision) || (decisive === undefined && rule.decision === decision)) decisive = { rule, subject };
    decision = stricter(decision, rule.decision);
  };
  r.split.simple.forEach((c, k) => {
    const argvs = c.assigns.length > 0 && c.argv.length > 0 ? [c.argv, ['env', ...c.assigns, ...c.argv]] : [c.argv];
    for (const argv of argvs) {
      if (argv.length === 0) continue;
      const own = layers.matchArgv(argv);
      for (const x of own) hit(x, show(argv));
      const nested = argv === c.argv ? r.inner[k]!.commands : unwrap(argv, r.budget).commands;
      for (const x of restrictionsOf(layers, nested, own)) hit(x, show(argv));
    }
  });
  for (const op of [...r.ops, ...r.innerOps]) for (const x of matchOp(layers, op).rules) hit(x, describeOp(op));
  const parts: Part[] = [{ decision, promptPrefix: 0, granted: false }];
  const reason = decisive ? ruleReason(decisive.rule, decisive.subject) : `complex_command default (${defaultSource(dflt.layer)}): ${decision}`;
  return finish(layers, { tool: 'bash', complex: why, parts }, matched, `complex script (${why}); ${reason}`);
}

function evaluateFile(layers: PolicyLayers, command: Command, grants: readonly Grant[]): Evaluation {
  const targets = pathFields(command.tool).map((field) => [field, command[field]] as const);
  const matched = new Set<Rule>();
  const parts: Part[] = [];
  for (const [field, raw] of targets) {
    if (raw === undefined) return refuse(command.tool, `missing_${field}: ${command.tool} needs a ${field}`);
    const n = normalizeWorkspacePath(raw);
    // Hard invariant: checked before any rule is read (POLICY.md §1).
    if (!n.ok) return refuse(command.tool, `${n.reason} (${field})`);
    const rules = layers.matchPath(command.tool, n.path);
    for (const r of rules) matched.add(r);
    const part = partFrom(layers, command.tool, rules, { path: n.path, field }, []);
    for (const r of accessRestrictions(layers, command.tool, field, n.path)) {
      matched.add(r);
      if (rank(r.decision) > rank(part.decision)) Object.assign(part, { decision: r.decision, rule: r });
    }
    parts.push(part);
  }
  const grant = grants.find((g) => fileGrantCovers(g, command.tool, parts));
  if (grant) for (const p of parts) if (p.decision === 'prompt') p.granted = true;
  return finish(layers, { tool: command.tool, parts }, matched);
}

/**
 * A tool that is not `ownRulesOnly` (protocol/tools.ts) also meets the forbid and prompt path
 * rules of `write` or `read` where it writes or reads, so policies that protect a path
 * (`.git/**`, secrets) cover a new tool before any file names it. Restrictions only: a
 * `write` allow never loosens the tool's own default.
 */
function accessRestrictions(layers: PolicyLayers, tool: ToolName, field: 'path' | 'dest', path: string): Rule[] {
  const d = TOOLS[tool];
  const access = d.ownRulesOnly ? undefined : d.attributes.find((a) => a.name === field)?.access;
  if (access === undefined || access === tool) return [];
  return layers.matchPath(access, path).filter((r) => r.decision !== 'allow');
}

type Where = Pick<Part, 'argv' | 'path' | 'field' | 'fileTool' | 'scope'>;

function opWhere(op: FileOp): Where {
  const w: Where = { path: op.path, field: op.via === 'operand' ? 'operand' : 'redirect', fileTool: op.tool };
  if (op.scope !== undefined) w.scope = op.scope;
  return w;
}

function partFrom(
  layers: PolicyLayers,
  tool: ToolName,
  rules: Rule[],
  where: Where,
  grants: readonly Grant[],
  inner: readonly Rule[] = [],
): Part {
  let rule: Rule | undefined;
  let promptPrefix = 0;
  for (const r of rules) {
    if (rule === undefined || rank(r.decision) > rank(rule.decision)) rule = r;
    // Only the command's own rules give a grant prefix: an inner rule's
    // prefix would not line up with this argv.
    if (r.decision === 'prompt' && r.kind === 'command') promptPrefix = Math.max(promptPrefix, prefixLength(r));
  }
  for (const r of inner) if (rule === undefined || rank(r.decision) > rank(rule.decision)) rule = r;
  const decision = rule?.decision ?? layers.defaultFor(tool).decision;
  const part: Part = { decision, rule, promptPrefix, granted: false, ...where };
  if (decision === 'prompt' && where.argv) part.granted = grants.some((g) => bashGrantCovers(g, where.argv!));
  if (decision === 'prompt' && where.fileTool) part.granted = grants.some((g) => g.tool === where.fileTool && g.path === where.path && g.dest === undefined);
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

/** forbid/prompt rules of the commands a wrapper runs (wrappers.ts), not already matched by the command itself. */
function restrictionsOf(layers: PolicyLayers, inner: readonly SimpleCommand[], ownRules: readonly Rule[]): Rule[] {
  if (inner.length === 0) return [];
  const own = new Set(ownRules);
  const out = new Set<Rule>();
  for (const c of inner) {
    if (c.argv.length === 0) continue;
    for (const r of layers.matchArgv(c.argv)) if (r.decision !== 'allow' && !own.has(r)) out.add(r);
  }
  return layers.sort(out);
}

function partReason(layers: PolicyLayers, detail: EvaluationDetail, p: Part, decision: Decision): string {
  // Built only for the deciding part: formatting every part is measurable.
  const subject = p.argv
    ? show(p.argv)
    : p.fileTool ? describeOp({ tool: p.fileTool, path: p.path ?? '', via: p.field === 'operand' ? 'operand' : undefined, scope: p.scope }) : `${detail.tool} ${p.field ?? 'path'} ${p.path ?? ''}`;
  if (p.granted && p.decision === 'prompt' && decision === 'allow') return `prompt for ${subject} satisfied by a session grant`;
  if (p.rule) return ruleReason(p.rule, subject);
  const key: DefaultKey = p.fileTool ?? detail.tool;
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

/**
 * An exact grant covers the same argv only; a prefix grant covers argv that
 * start with it, unless the prefix names a shell, interpreter or wrapper
 * (such a grant, stored before §7, covers nothing).
 */
export function bashGrantCovers(g: Grant, argv: readonly string[]): boolean {
  if (g.tool !== 'bash') return false;
  if (g.argv) return g.argv.length === argv.length && g.argv.every((t, k) => argv[k] === t);
  if (!g.prefix || g.prefix.length === 0 || argv.length < g.prefix.length || prefixRunsAnything(g.prefix)) return false;
  return g.prefix.every((t, k) => argv[k] === t);
}

function fileGrantCovers(g: Grant, tool: ToolName, parts: readonly Part[]): boolean {
  if (g.tool !== tool || g.path === undefined || parts[0]?.path !== g.path) return false;
  return g.dest === undefined ? parts.length === 1 : parts[1]?.path === g.dest;
}
