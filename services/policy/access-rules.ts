// What a tool the policy files do not name yet meets besides its own rules:
// the forbid/prompt path rules of `write`/`read` where it writes/reads.
import { TOOLS, type ToolName } from '../protocol/index.ts';
import type { PolicyLayers } from './layers.ts';
import type { Rule } from './rule-kinds/index.ts';

/**
 * A tool that is not `ownRulesOnly` (protocol/tools.ts) also meets the forbid and prompt path
 * rules of `write` or `read` where it writes or reads, so policies that protect a path
 * (`.git/**`, secrets) cover a new tool before any file names it. Restrictions only: a
 * `write` allow never loosens the tool's own default.
 */
export function accessRestrictions(layers: PolicyLayers, tool: ToolName, field: 'path' | 'dest', path: string): Rule[] {
  const d = TOOLS[tool];
  const access = d.ownRulesOnly ? undefined : d.attributes.find((a) => a.name === field)?.access;
  if (access === undefined || access === tool) return [];
  return layers.matchPath(access, path).filter((r) => r.decision !== 'allow');
}
