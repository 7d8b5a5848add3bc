import { PipelineError } from './errors.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { SessionMeta } from './sessions.ts';

/**
 * A seeded file is the submitter's input, not a command, yet it may not go
 * where the policy would not let it: each path must be allowed as a `write`
 * outright (prompt refuses too: seeding waits for nobody) by the rules that
 * judge seeded files (`applies_to`), like an uploaded archive's entries.
 * @throws PipelineError invalid_files listing every refused path with its rules
 */
export function checkSeeds(gate: Pick<PolicyGate, 'evaluateSeeded'>, session: SessionMeta, files: Record<string, string>): void {
  const refused = Object.keys(files).flatMap((path) => {
    const e = gate.evaluateSeeded(session, path);
    return e.decision === 'allow' ? [] : [{ path, decision: e.decision, reason: e.reason, matched_rules: e.matched_rules }];
  });
  if (refused.length) throw new PipelineError('invalid_files', 'the policy does not allow writing some seeded files', refused);
}
