// A seeded or uploaded file judged as a `write` of its path (API.md: a
// session's `files`, and every entry of an uploaded archive). Not a command:
// only the rules whose `applies_to` includes `seeded_files` (the default) judge
// it, so an operator can keep a rule for what commands do (e.g. hands off
// `.git/**`) while a repository arrives whole. The hard workspace invariant
// and the `write` defaults hold as for any write.
import { rank, type Decision } from './decision.ts';
import type { PolicyLayers } from './layers.ts';
import { normalizeWorkspacePath } from './path.ts';
import type { Evaluation } from './policy.ts';
import type { PathRule } from './rule-kinds/path-rule.ts';

export function evaluateSeededFile(layers: PolicyLayers, rawPath: string): Evaluation {
  const n = normalizeWorkspacePath(rawPath);
  if (!n.ok) return { decision: 'forbid', matched_rules: [], reason: `${n.reason} (seeded file ${rawPath})` };
  const subject = `seeded file ${n.path}`;
  const rules = layers.matchSeeded(n.path);
  let decisive: PathRule | undefined;
  for (const r of rules) if (decisive === undefined || rank(r.decision) > rank(decisive.decision)) decisive = r;
  const matched_rules = rules.map((r) => ({ id: r.id, layer: r.layer, decision: r.decision, justification: r.justification }));
  if (decisive) {
    const why = decisive.justification ? `: ${decisive.justification}` : '';
    return { decision: decisive.decision, matched_rules, reason: `${decisive.decision} by rule ${decisive.id} (${decisive.layer}) for ${subject}${why}` };
  }
  const d = layers.defaultFor('write');
  const decision: Decision = d.decision;
  return { decision, matched_rules, reason: `no rule matched ${subject}; write default (${d.layer === 'builtin' ? 'built-in' : `${d.layer} layer`}): ${decision}` };
}
