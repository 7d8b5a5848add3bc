// Explanations for people deciding an approval: a bash script's simple
// commands one by one (each with its own decision and matched rules), and a
// grant put into words. Pure, like the rest of the engine; the verdict itself
// still comes from evaluate() on the whole command.
import { quote } from 'shell-quote';
import type { Command } from '../protocol/index.ts';
import type { PolicyLayers } from './layers.ts';
import type { MatchedRule } from './matched-rule.ts';
import { evaluate, type Evaluation, type Grant } from './policy.ts';
import { splitScript } from './shell-split.ts';
import type { Decision } from './decision.ts';
import { newBudget, spend } from './budget.ts';

export type Segment = {
  /** the simple command as written in the script (with its redirections); judged as its argv, quoted */
  text: string;
  argv: string[];
  decision: Decision;
  matched_rules: MatchedRule[];
  reason: string;
};

export type BashExplanation = {
  /** why the script could not be split (then one segment: the whole script) */
  complex: string | null;
  segments: Segment[];
};

/**
 * Each simple command of a bash script, evaluated on its own with the same
 * layers and grants. A complex script is one segment carrying the whole
 * script's evaluation, since its parts cannot be judged apart; so is one
 * whose parts cost more than one evaluation budget to judge (budget.ts):
 * the explanation costs at most two evaluations of the script.
 * @example explainBash(layers, 'ls && rm -rf build').segments.map((s) => s.decision) // ['allow', 'prompt']
 */
export function explainBash(layers: PolicyLayers, cmd: string, grants: readonly Grant[] = []): BashExplanation {
  const split = splitScript(cmd);
  if (split.complex !== undefined) return wholeScript(layers, cmd, grants, split.complex);
  const budget = newBudget();
  const segments: Segment[] = [];
  for (const { argv, source } of split.simple) {
    if (argv.length === 0) continue;
    // Quoting and reading the part again cost its length.
    if (!spend(budget, argv.reduce((n, a) => n + a.length + 1, 0))) break;
    const quoted = quote(argv);
    const e = evaluate(layers, bashCommand(quoted), grants, budget);
    if (budget.over !== undefined) break;
    // People read the part as they wrote it: `OFFLINE_TEST=1`, not shell-quote's `OFFLINE_TEST\=1`.
    segments.push({ text: source ? cmd.slice(source[0], source[1]) : quoted, argv, ...pick(e) });
  }
  return budget.over !== undefined ? wholeScript(layers, cmd, grants, budget.over) : { complex: null, segments };
}

function wholeScript(layers: PolicyLayers, cmd: string, grants: readonly Grant[], why: string): BashExplanation {
  return { complex: why, segments: [{ text: cmd, argv: [], ...pick(evaluate(layers, bashCommand(cmd), grants)) }] };
}

function bashCommand(cmd: string): Command {
  return { id: '0', tool: 'bash', cmd, need_result: false };
}

function pick(e: Evaluation): Pick<Segment, 'decision' | 'matched_rules' | 'reason'> {
  return { decision: e.decision, matched_rules: e.matched_rules, reason: e.reason };
}

/**
 * What an `approve_for_session` grant covers, in words (POLICY.md §5, §7):
 * exact argv for bash, the same tool on the same path for file tools.
 * @example describeGrant({ tool: 'bash', prefix: ['rm', '-rf', 'build'] }, cmd) // 'later bash commands that are exactly `rm -rf build` …'
 */
export function describeGrant(g: Grant, command?: Command): string {
  if (g.tool === 'bash') {
    const words = g.prefix ?? [];
    const exact = command?.tool === 'bash' && splitScript(command.cmd ?? '').commands.some((argv) => argv.length === words.length && argv.every((t, i) => t === words[i]));
    return exact
      ? `for the rest of this session, the simple command \`${quote(words)}\` exactly (same program, same arguments) runs without asking again; anything else still asks. A grant never overrides a forbid.`
      : `for the rest of this session, any simple command starting with \`${quote(words)}\` runs without asking again; anything else still asks. A grant never overrides a forbid.`;
  }
  const where = g.dest !== undefined ? `from ${g.path} to ${g.dest}` : `on ${g.path}`;
  return `for the rest of this session, \`${g.tool}\` ${where} runs without asking again; other tools or paths still ask. A grant never overrides a forbid.`;
}
