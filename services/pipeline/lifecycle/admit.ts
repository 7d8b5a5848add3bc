import { OUTSIDE, type Evaluation, type Grant } from '../../policy/index.ts';
import type { Command } from '../../protocol/index.ts';
import type { PolicyGate } from '../policy-gate.ts';
import type { SessionMeta } from '../sessions.ts';

// Admission: whether a command may run now, must wait for an operator, or is
// refused — the policy (with the session's grants) evaluated, then the
// session's approval mode applied. The same function decides at enqueue (a
// refusal is recorded `forbidden` at once) and at execution (with the grants
// of that moment). Pure, given the gate.

export type Admission =
  | { action: 'run'; evaluation: Evaluation }
  | { action: 'ask'; evaluation: Evaluation }
  | { action: 'refuse'; evaluation: Evaluation; reason: string; code: 'forbidden' | typeof OUTSIDE };

export function admit(
  gate: Pick<PolicyGate, 'evaluate' | 'decide'>, session: SessionMeta, command: Command, grants: Grant[],
): Admission {
  const evaluation = gate.evaluate(session, command, grants);
  if (evaluation.decision === 'forbid') return refusal(evaluation, evaluation.reason || 'forbidden by policy');
  const decided = gate.decide(evaluation, session, command, grants);
  if (decided.action === 'refuse') return refusal(evaluation, decided.reason ?? 'refused by policy');
  return { action: decided.action, evaluation };
}

/**
 * admit() at enqueue, reading the session's grants only when they could
 * matter: a grant only ever satisfies a prompt (POLICY.md §5), so an
 * evaluation without a prompt is the same with or without them.
 */
export async function admitReadingGrants(
  gate: Pick<PolicyGate, 'evaluate' | 'decide'>, session: SessionMeta, command: Command, grants: () => Promise<Grant[]>,
): Promise<Admission> {
  const bare = admit(gate, session, command, []);
  return bare.evaluation.decision === 'prompt' ? admit(gate, session, command, await grants()) : bare;
}

// The hard invariant keeps its own code, the same whether caught at enqueue or at execution.
function refusal(evaluation: Evaluation, reason: string): Admission {
  return { action: 'refuse', evaluation, reason, code: reason.startsWith(OUTSIDE) ? OUTSIDE : 'forbidden' };
}
