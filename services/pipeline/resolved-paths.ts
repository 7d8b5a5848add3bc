import { pathFields, targetOf, type Command } from '../protocol/index.ts';
import { normalizeWorkspacePath, OUTSIDE, redirectFileOps, type Grant } from '../policy/index.ts';
import type { ExpectedResolution } from '../sandbox/index.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { Sandboxes } from './sandboxes.ts';
import type { SessionMeta } from './sessions.ts';

// POLICY.md §7 "Resolved paths": path rules and the workspace invariant are
// checked on the path as it resolves at execution (symlinks followed) as
// well as on the path as written, so `g -> .git` cannot walk around the
// `.git/**` rules. The worker asks the sandbox for the resolutions right
// before running (nothing else of the session runs in between: commands are
// serial and their leftover processes are killed) and hands them to the
// executor as `expect`, which refuses the side effect if they changed.

export type Resolution = {
  /** What the executor must still see when it runs the command. */
  expect?: ExpectedResolution;
  /** Set when a path leads out of the workspace: the hard invariant, refused before any rule. */
  outside?: string;
  /** The command with resolved paths, when a symlink made them differ from the written ones. */
  resolved?: Command;
};

export async function resolveForPolicy(sandboxes: Sandboxes, sid: string, command: Command): Promise<Resolution> {
  if (command.tool === 'bash') return {};
  const fields = pathFields(command.tool).filter((f) => typeof command[f] === 'string');
  if (fields.length === 0) return {};
  const written = fields.map((f) => command[f] as string);
  const real = await sandboxes.resolvePaths(sid, written);
  const expect: ExpectedResolution = {};
  let differs = false;
  const resolved: Command = { ...command };
  for (const [i, field] of fields.entries()) {
    const r = real[i] ?? null;
    if (r === null) return { outside: `${OUTSIDE}: ${JSON.stringify(written[i])} leads outside /workspace through a symlink` };
    expect[field] = r;
    resolved[field] = r;
    const asWritten = normalizeWorkspacePath(written[i]!);
    if (!asWritten.ok || asWritten.path !== r) differs = true;
  }
  return differs ? { expect, resolved } : { expect };
}

export type PathVerdict = { ok: true; expect?: ExpectedResolution } | { ok: false; code: string; reason: string };

/**
 * Right before the side effect: the paths as they resolve now must be
 * allowed by the policy, or be exactly what an operator approved
 * (`approvedTarget`); a symlink that leads elsewhere needs its own approval.
 */
export async function verifyResolvedPaths(
  d: { sandboxes: Sandboxes; gate: PolicyGate }, session: SessionMeta, grants: Grant[], command: Command, approvedTarget?: string,
): Promise<PathVerdict> {
  if (command.tool === 'bash') return verifyRedirects(d, session, grants, command);
  const r = await resolveForPolicy(d.sandboxes, session.session_id, command);
  if (r.outside) return { ok: false, code: OUTSIDE, reason: r.outside };
  if (!r.resolved) return { ok: true, expect: r.expect };
  return judgeResolved(d.gate, session, grants, command, r.resolved, approvedTarget);
}

/** The paths as written, normalised: what the executor must find when no symlink is involved (one round trip). */
export function expectAsWritten(command: Command): ExpectedResolution | undefined {
  if (command.tool === 'bash') return undefined;
  const expect: ExpectedResolution = {};
  for (const field of pathFields(command.tool)) {
    const raw = command[field];
    if (typeof raw !== 'string') continue;
    const n = normalizeWorkspacePath(raw);
    if (!n.ok) return undefined;
    expect[field] = n.path;
  }
  return expect;
}

/** Judges a command whose paths resolve to `resolved`'s (a symlink made them differ from the written ones). */
export function judgeResolved(
  gate: PolicyGate, session: SessionMeta, grants: Grant[], command: Command, resolved: Command, approvedTarget?: string,
): PathVerdict {
  const expect: ExpectedResolution = {};
  for (const field of pathFields(resolved.tool)) if (typeof resolved[field] === 'string') expect[field] = resolved[field];
  const evaluation = gate.evaluate(session, resolved, grants);
  const via = `${JSON.stringify(targetOf(command))} resolves to ${JSON.stringify(targetOf(resolved))} through a symlink`;
  if (evaluation.decision === 'forbid') return { ok: false, code: 'forbidden', reason: `${via}: ${evaluation.reason || 'forbidden by policy'}` };
  if (evaluation.decision === 'allow' || approvedTarget === targetOf(resolved)) return { ok: true, expect };
  if (gate.decide(evaluation, session, resolved, grants).action === 'run') return { ok: true, expect };
  return { ok: false, code: 'forbidden', reason: `${via}, which needs its own approval: name it directly` };
}

/**
 * A bash command's redirections are file operations (POLICY.md §7); one
 * whose target resolves elsewhere through a symlink is judged there too: a
 * forbid refuses the command, and one that would need an approval of its
 * own refuses it as well (name the real path so an operator can see it).
 */
async function verifyRedirects(
  d: { sandboxes: Sandboxes; gate: PolicyGate }, session: SessionMeta, grants: Grant[], command: Command,
): Promise<PathVerdict> {
  const ops = redirectFileOps(command.cmd ?? '');
  if (ops.length === 0) return { ok: true };
  const real = await d.sandboxes.resolvePaths(session.session_id, ops.map((o) => o.path));
  for (const [i, op] of ops.entries()) {
    const r = real[i] ?? null;
    if (r === null) return { ok: false, code: OUTSIDE, reason: `${OUTSIDE}: the redirection to ${JSON.stringify(op.path)} leads outside /workspace through a symlink` };
    if (r === op.path) continue;
    const asOp: Command = { id: command.id, tool: op.tool, path: r, need_result: false };
    const evaluation = d.gate.evaluate(session, asOp, grants);
    const via = `the redirection to ${JSON.stringify(op.path)} resolves to ${JSON.stringify(r)} through a symlink`;
    if (evaluation.decision === 'forbid') return { ok: false, code: 'forbidden', reason: `${via}: ${evaluation.reason || 'forbidden by policy'}` };
    if (evaluation.decision !== 'allow' && d.gate.decide(evaluation, session, asOp, grants).action !== 'run') {
      return { ok: false, code: 'forbidden', reason: `${via}, which needs its own approval: name it directly` };
    }
  }
  return { ok: true };
}
