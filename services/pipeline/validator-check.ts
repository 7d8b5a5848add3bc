import type { Command } from '../protocol/index.ts';
import { PipelineError } from './errors.ts';
import { admit } from './lifecycle/admit.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { SessionMeta } from './sessions.ts';

// A job's validator (API.md additions, `validate`) is judged at submit with the
// session's layered policy and approval mode, the same admission it meets at
// every round: one that would be refused (a `forbid` rule, or a `prompt` under
// approval `never`) is a 400 naming the rule, before anything exists. A
// `prompt` under `on-request` passes: each round then asks an operator, like
// any command.

export function checkValidator(gate: Pick<PolicyGate, 'evaluate' | 'decide'>, session: SessionMeta, command: Command): void {
  const a = admit(gate, session, command, []);
  if (a.action !== 'refuse') return;
  const { decision, reason, matched_rules } = a.evaluation;
  const deciding = matched_rules.filter((r) => r.decision === decision);
  // The evaluation's reason names the rule (or the default) that decided; under `never` a prompt is refused for the mode, so say both.
  const why = a.reason === reason ? reason : `${reason}; ${a.reason}`;
  throw new PipelineError('invalid_validator', `the policy refuses the validator: ${why}`, {
    cmd: command.cmd ?? null, decision, rules: deciding.map((r) => r.id), matched_rules, reason: why,
  });
}
