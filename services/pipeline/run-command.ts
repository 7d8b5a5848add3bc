import { OUTSIDE, type Grant } from '../policy/index.ts';
import type { Command } from '../protocol/index.ts';
import type { ExecutionResult, ExpectedResolution } from '../sandbox/index.ts';
import { reasonOf, withIds } from '../log/index.ts';
import type { ApprovalState } from './approvals.ts';
import { ensureBaseline } from './baseline.ts';
import type { CommandLifecycle } from './command-lifecycle.ts';
import type { EgressListeners } from './egress/egress-listeners.ts';
import type { Sandboxes } from './sandboxes.ts';
import type { LedgerRecord, LedgerStatus } from './ledger-record.ts';
import { failedRun, outcomeOf } from './lifecycle/outcome.ts';
import { eventFor } from './lifecycle/table.ts';
import type { OwnerCaps } from './owner-caps.ts';
import type { PolicyGate } from './policy-gate.ts';
import { expectAsWritten, judgeResolved, verifyResolvedPaths, type PathVerdict } from './resolved-paths.ts';
import type { SessionMeta } from './sessions.ts';

// The side effect of one admitted command: `running` first, then the paths
// checked as they resolve right now (POLICY.md §7), the executor, and the
// final status from the outcome. The operator's answer is recorded at once
// (with `running`) even when the path check has to wait for the sandbox.

export type RunPorts = {
  lifecycle: CommandLifecycle;
  sandboxes: Sandboxes;
  gate: PolicyGate;
  /** per-key accounting: a command keeps its session's container counted live */
  caps?: Pick<OwnerCaps, 'touchLive'>;
  /** the worker's egress proxy listens for the session before its command runs (POLICY.md §8) */
  egress?: Pick<EgressListeners, 'ready'>;
};
export type RunOptions = { workerId?: string; outputCapChars?: number };
/**
 * Called in the same tick as the final transition is sent, with the status it writes: what the caller sends then
 * (the run's next step) goes to Redis in the same write (a loop turn's commands leave together, redis-write-batch.ts).
 */
export type OnFinishSent = (status: LedgerStatus) => void;
/** `run`: the run job's id (session-run.ts); its changes are refused once another run took the session's list over */
export type RunContext = { rec: LedgerRecord; session: SessionMeta; grants: Grant[]; command: Command; run?: string };

type Judge = (resolved: Command) => PathVerdict;

export async function runCommand(p: RunPorts, ctx: RunContext, approval: ApprovalState | null, opts: RunOptions, onFinishSent?: OnFinishSent): Promise<void> {
  const { rec, session } = ctx;
  const at = new Date();
  const started = await p.lifecycle.apply(rec, 'start', {
    started: { at, ...(opts.workerId ? { by: opts.workerId } : {}) }, run: ctx.run, ...(approval ? { approval } : {}),
  });
  if (!started.ok) {
    if ('notOwner' in started) {
      withIds({ job_id: session.job_id, session_id: rec.session, command_id: rec.id })
        .warn({ run: ctx.run, holder: started.notOwner }, 'a run that lost its session\'s list to a re-delivered run starts nothing; the command is that run\'s');
    }
    return;
  }
  const running = started.record;
  const result = await execute(p, ctx, approval, at);
  p.lifecycle.observeExecution(rec.tool, result.duration_ms);
  const outcome = outcomeOf(rec.tool, result, opts.outputCapChars);
  const finishing = p.lifecycle.apply(running, eventFor(outcome.status), { result: outcome.result, jobId: session.job_id });
  onFinishSent?.(outcome.status);
  await finishing;
}

async function execute(p: RunPorts, ctx: RunContext, approval: ApprovalState | null, startedAt: Date): Promise<ExecutionResult> {
  const { rec, session, grants, command } = ctx;
  let expect: ExpectedResolution | undefined;
  let judge: Judge | undefined;
  if (command.tool === 'bash') {
    const verdict = await verifyResolvedPaths(p, session, grants, command, approval?.target);
    if (!verdict.ok) return failedRun(command.tool, verdict.code, verdict.reason, 0);
    expect = verdict.expect;
  } else {
    // The executor checks that the paths resolve as written in the same round
    // trip as the side effect; when they do not, they are judged as they resolve.
    expect = expectAsWritten(command);
    judge = (resolved) => judgeResolved(p.gate, session, grants, command, resolved, approval?.target);
  }
  await p.caps?.touchLive(session.owner, rec.session);
  await p.egress?.ready(rec.session);
  try {
    // No signal here on purpose: a graceful shutdown lets a running command finish.
    return await executeJudged(p.sandboxes, rec.session, command, expect, judge);
  } catch (err) {
    withIds({ job_id: session.job_id, session_id: rec.session, command_id: rec.id }).error({ err }, 'executor error');
    return failedRun(command.tool, 'executor_error', `executor error: ${reasonOf(err)}`, Date.now() - startedAt.getTime());
  }
}

/**
 * A command runs on a workspace that has its baseline (GET …/changes): the
 * executor says when there is none yet (the first command, or the first
 * after an upload); it is taken, and the command asked once more.
 */
async function executeOnBaseline(sandboxes: Sandboxes, sid: string, command: Command, expect: ExpectedResolution | undefined): Promise<ExecutionResult> {
  const opts = expect ? { expect } : {};
  const first = await sandboxes.execute(sid, command, { ...opts, needsBaseline: true });
  if (first.error_code !== 'baseline_missing') return first;
  await ensureBaseline(sandboxes, sid);
  return sandboxes.execute(sid, command, opts);
}

/**
 * Executes with `expect`; when the executor answers `path_changed` (a
 * symlink made the paths resolve elsewhere) the resolved paths are judged and,
 * if the policy allows them, executed once more against them.
 */
async function executeJudged(
  sandboxes: Sandboxes, sid: string, command: Command, expect: ExpectedResolution | undefined, judge?: Judge,
): Promise<ExecutionResult> {
  const first = await executeOnBaseline(sandboxes, sid, command, expect);
  if (first.error_code !== 'path_changed' || !first.resolved || !judge) return first;
  const { path, dest } = first.resolved;
  if (path === null || dest === null) {
    return { ...first, error_code: OUTSIDE, error: `${OUTSIDE}: ${first.error ?? 'a path leads outside /workspace through a symlink'}` };
  }
  const verdict = judge({ ...command, ...(path !== undefined ? { path } : {}), ...(dest !== undefined ? { dest } : {}) });
  if (!verdict.ok) return { ...first, error_code: verdict.code, error: verdict.reason };
  return sandboxes.execute(sid, command, { expect: verdict.expect });
}
