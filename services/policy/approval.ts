// Approval semantics (POLICY.md §4, §5) as pure functions: what happens to an
// evaluated command under a mode and the session's grants, and which grant an
// `approve_for_session` answer creates. The waiting itself lives in the pipeline.
import { pathFields, type Command } from '../protocol/index.ts';
import type { ApprovalMode } from './approval-mode.ts';
import type { GrantScope } from './grant-scope.ts';
import { normalizeWorkspacePath } from './path.ts';
import { bashGrantCovers, detailOf, type Evaluation, type Grant, type Part } from './policy.ts';
import { prefixRunsAnything } from './runs-anything.ts';
import { splitScript } from './shell-split.ts';

export type ApprovalAction = { action: 'run' | 'ask' | 'refuse'; reason?: string };

export const NEVER_REASON = 'approval required by policy, but approval mode is never';
export const GRANTED_REASON = 'approved for this session';

/**
 * allow → run; forbid → refuse (in every mode, grants or not); prompt → run
 * if session grants cover it, else refuse under `never`, ask under `on-request`.
 */
export function decideApproval(evaluation: Evaluation, mode: ApprovalMode, command: Command, grants: readonly Grant[]): ApprovalAction {
  switch (evaluation.decision) {
    case 'allow':
      return { action: 'run' };
    case 'forbid':
      return { action: 'refuse', reason: evaluation.reason };
    case 'prompt':
      if (grantsCover(evaluation, command, grants)) return { action: 'run', reason: GRANTED_REASON };
      if (mode === 'never') return { action: 'refuse', reason: NEVER_REASON };
      return { action: 'ask' };
  }
}

/** Whether grants satisfy every prompting part of a `prompt` evaluation. Complex scripts: never. */
export function grantsCover(evaluation: Evaluation, command: Command, grants: readonly Grant[]): boolean {
  if (evaluation.decision !== 'prompt' || grants.length === 0) return false;
  if (command.tool !== 'bash') {
    const g = grantFor(command, evaluation);
    return grants.some((x) => x.tool === g.tool && x.path === g.path && x.dest === g.dest && g.path !== undefined);
  }
  const detail = detailOf(evaluation);
  if (detail?.complex !== undefined) return false;
  // Without details (an evaluation that went through JSON) every part must be covered.
  const split = splitScript(command.cmd ?? '');
  if (split.complex !== undefined) return false;
  const prompting = detail ? detail.parts.filter((p) => p.decision === 'prompt') : split.commands.map((argv) => ({ argv }) as Partial<Part>);
  return prompting.length > 0 && prompting.every((p) => grants.some((g) => partCovered(g, p)));
}

function partCovered(g: Grant, p: Partial<Part>): boolean {
  if (p.argv) return bashGrantCovers(g, p.argv);
  return p.fileTool !== undefined && g.tool === p.fileTool && g.path === p.path && g.dest === undefined;
}

/** What `approve_for_session` may grant for one approval, in words for the operator (§7). */
export type GrantOption = { scope: GrantScope; grants: Grant[]; covers: string };
export type GrantOptions = { options: GrantOption[]; prefix_unavailable?: string };

/**
 * The grant options of an approval: `exact` always (the same argv, or the
 * same tool on the same path); `prefix` (the matched prompt rules' literal
 * prefixes) only when every prompting command has one and none names a
 * shell, interpreter or wrapper.
 */
export function grantOptions(command: Command, evaluation: Evaluation): GrantOptions {
  const exact = grantsFor(command, evaluation, 'exact');
  const options: GrantOption[] = [{ scope: 'exact', grants: exact, covers: describe(exact, 'exact') }];
  const prefix = prefixGrants(command, evaluation);
  if ('reason' in prefix) return { options, prefix_unavailable: prefix.reason };
  options.push({ scope: 'prefix', grants: prefix.grants, covers: describe(prefix.grants, 'prefix') });
  return { options };
}

/** The grant of `approve_for_session` (exact scope): the first of grantsFor(). */
export function grantFor(command: Command, evaluation: Evaluation): Grant {
  if (command.tool !== 'bash') {
    const path = command.path === undefined ? undefined : normalized(command.path);
    const dest = pathFields(command.tool).includes('dest') && command.dest !== undefined ? normalized(command.dest) : undefined;
    return dest === undefined ? { tool: command.tool, path } : { tool: command.tool, path, dest };
  }
  return grantsFor(command, evaluation)[0] ?? { tool: 'bash', argv: splitScript(command.cmd ?? '').commands[0] ?? [] };
}

/**
 * One grant per distinct prompting part: bash → its exact argv (`exact`) or
 * the prompting rule's prefix (`prefix`; see grantOptions for when that is
 * offered); a prompting redirection → `write`/`read` of that path.
 */
export function grantsFor(command: Command, evaluation: Evaluation, scope: GrantScope = 'exact'): Grant[] {
  if (command.tool !== 'bash') return [grantFor(command, evaluation)];
  if (scope === 'prefix') {
    const p = prefixGrants(command, evaluation);
    return 'grants' in p ? p.grants : [];
  }
  const detail = detailOf(evaluation);
  if (detail?.complex !== undefined) return [];
  const parts: Partial<Part>[] = detail
    ? detail.parts.filter((p) => p.decision === 'prompt')
    : splitScript(command.cmd ?? '').commands.map((argv) => ({ argv }));
  return unique(parts.map((p): Grant | null => (p.argv ? { tool: 'bash', argv: p.argv } : p.fileTool && p.path ? { tool: p.fileTool, path: p.path } : null)));
}

function prefixGrants(command: Command, evaluation: Evaluation): { grants: Grant[] } | { reason: string } {
  if (command.tool !== 'bash') return { reason: 'file tools are granted on the same path only' };
  const detail = detailOf(evaluation);
  if (!detail || detail.complex !== undefined) return { reason: 'a complex script is never granted' };
  const out: (Grant | null)[] = [];
  for (const p of detail.parts.filter((x) => x.decision === 'prompt')) {
    if (!p.argv) { out.push(p.fileTool && p.path ? { tool: p.fileTool, path: p.path } : null); continue; }
    if (p.promptPrefix === 0) return { reason: `\`${p.argv.join(' ')}\` was stopped by a default, not by a rule with a prefix` };
    const prefix = p.argv.slice(0, p.promptPrefix);
    if (prefixRunsAnything(prefix)) return { reason: `the prefix \`${prefix.join(' ')}\` names a shell, interpreter or wrapper: it would grant any command` };
    out.push({ tool: 'bash', prefix });
  }
  const grants = unique(out);
  return grants.length > 0 ? { grants } : { reason: 'nothing to grant' };
}

function describe(grants: readonly Grant[], scope: GrantScope): string {
  if (grants.length === 0) return 'nothing (this command is not granted for the session)';
  return grants.map((g) => {
    if (g.argv) return `exactly \`${g.argv.join(' ')}\``;
    if (g.prefix) return `any bash command starting with \`${g.prefix.join(' ')}\``;
    return `${g.tool} of ${g.path}${g.dest !== undefined ? ` -> ${g.dest}` : ''}${scope === 'prefix' ? ' (same path only)' : ''}`;
  }).join('; ');
}

function unique(grants: readonly (Grant | null)[]): Grant[] {
  const seen = new Set<string>();
  const out: Grant[] = [];
  for (const g of grants) {
    if (!g) continue;
    const key = JSON.stringify(g);
    if (!seen.has(key)) { seen.add(key); out.push(g); }
  }
  return out;
}

function normalized(p: string): string | undefined {
  const n = normalizeWorkspacePath(p);
  return n.ok ? n.path : undefined;
}
