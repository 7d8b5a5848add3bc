// Approval semantics (POLICY.md §4, §5) as pure functions: what happens to an
// evaluated command under a mode and the session's grants, and which grant an
// `approve_for_session` answer creates. The waiting itself lives in the pipeline.
import type { Command } from '../protocol/command.ts';
import { normalizeWorkspacePath } from './path.ts';
import { bashGrantCovers, detailOf, type Evaluation, type Grant } from './policy.ts';
import { splitScript } from './shell-split.ts';

export type ApprovalMode = 'never' | 'on-request';
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
  const prompting = detail ? detail.parts.filter((p) => p.decision === 'prompt').map((p) => p.argv ?? []) : split.commands;
  return prompting.length > 0 && prompting.every((argv) => grants.some((g) => bashGrantCovers(g, argv)));
}

/**
 * The grant `approve_for_session` creates: bash → the prompting rule's prefix
 * (the longest one), else the first two argv tokens, of the first prompting
 * simple command; file tools → the same tool on the same (normalised) path.
 */
export function grantFor(command: Command, evaluation: Evaluation): Grant {
  if (command.tool !== 'bash') {
    const path = command.path === undefined ? undefined : normalized(command.path);
    const dest = command.tool === 'copy' && command.dest !== undefined ? normalized(command.dest) : undefined;
    return dest === undefined ? { tool: command.tool, path } : { tool: command.tool, path, dest };
  }
  return grantsFor(command, evaluation)[0] ?? { tool: 'bash', prefix: firstTwo(splitScript(command.cmd ?? '').commands[0] ?? []) };
}

/** One grant per distinct prompting simple command, for a pipeline that wants them all. */
export function grantsFor(command: Command, evaluation: Evaluation): Grant[] {
  if (command.tool !== 'bash') return [grantFor(command, evaluation)];
  const detail = detailOf(evaluation);
  const parts = detail
    ? detail.parts.filter((p) => p.decision === 'prompt' && p.argv).map((p) => ({ argv: p.argv!, n: p.promptPrefix }))
    : splitScript(command.cmd ?? '').commands.map((argv) => ({ argv, n: 0 }));
  const out: Grant[] = [];
  const seen = new Set<string>();
  for (const { argv, n } of parts) {
    const prefix = n > 0 ? argv.slice(0, n) : firstTwo(argv);
    const key = JSON.stringify(prefix);
    if (prefix.length === 0 || seen.has(key)) continue;
    seen.add(key);
    out.push({ tool: 'bash', prefix });
  }
  return out;
}

function firstTwo(argv: readonly string[]): string[] {
  return argv.slice(0, 2);
}

function normalized(p: string): string | undefined {
  const n = normalizeWorkspacePath(p);
  return n.ok ? n.path : undefined;
}
