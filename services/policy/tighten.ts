// Submitters can only tighten (POLICY.md §7): a policy sent with a job or a
// session by a submitter key may add prompt and forbid rules and stricter
// defaults. Grants are the session layer's only other allows.
import { rank } from './decision.ts';
import { PolicyLoosensError } from './errors.ts';
import type { PolicyLayers } from './layers.ts';
import type { PolicyFile } from './parser.ts';
import { DEFAULT_KEYS } from './schema.ts';

/**
 * @param operator the global and project layers the session will run under
 * @throws PolicyLoosensError naming the first allow rule or looser default
 */
export function looseningIn(file: PolicyFile, operator: PolicyLayers): void {
  const allow = file.rules.find((r) => r.decision === 'allow');
  if (allow) {
    throw new PolicyLoosensError(
      `${file.name}: rules[${allow.index}] (${allow.id}): an allow rule would loosen the operator's policy; a submitter's policy may add prompt and forbid rules only`,
      { index: allow.index, id: allow.id }, file.name,
    );
  }
  for (const key of DEFAULT_KEYS) {
    const mine = file.defaults[key];
    if (mine === undefined) continue;
    const theirs = operator.defaultFor(key);
    if (rank(mine) < rank(theirs.decision)) {
      const where = theirs.layer === 'builtin' ? 'built-in' : `${theirs.layer} layer`;
      throw new PolicyLoosensError(
        `${file.name}: defaults.${key}: ${mine} is looser than ${theirs.decision} (${where}); a submitter's policy may only make defaults stricter`,
        { default: key }, file.name,
      );
    }
  }
}
