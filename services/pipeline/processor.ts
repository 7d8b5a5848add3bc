import type { Command } from '../protocol/command.ts';
import type { Approvals, ApprovalState } from './approvals.ts';
import type { PublicApproval } from './events.ts';
import { OUTSIDE } from '../policy/index.ts';
import type { Executor, ExecutionResult, ExpectedResolution } from './executor.ts';
import { emptyResult, type Ledger } from './ledger.ts';
import { capText, summarize, type LedgerApproval, type LedgerRecord, type LedgerResult } from './ledger-record.ts';
import type { PipelineMetrics } from './metrics.ts';
import type { Grant, PolicyGate } from './policy-gate.ts';
import type { PipelineRedis } from './redis.ts';
import type { Keys } from './keys.ts';
import type { OwnerCaps } from './owner-caps.ts';
import { expectAsWritten, isRefusal, judgeResolved, verifyResolvedPaths, type PathVerdict } from './resolved-paths.ts';
import type { SessionMeta, Sessions } from './sessions.ts';
import { skipOne, skipReason, skipRestOfTurn } from './turns.ts';

// What a worker does with one job: the command state machine. `signal` only
// cuts approval waits short (ApprovalWaitAborted): the caller then hands the
// job back to the queue, still at its head. The ledger
// status read first decides everything, which is what makes a re-delivered
// (stalled) job safe:
//   queued            → policy/approval check, then running → final
//   awaiting_approval → wait again on the same token (no side effect happened)
//   running           → the previous worker died mid-way: interrupted, never re-run
//   final             → nothing to do

export type ProcessorDeps = {
  redis: PipelineRedis; keys: Keys; ledger: Ledger; sessions: Sessions; approvals: Approvals;
  gate: PolicyGate; executor: Executor; metrics: PipelineMetrics;
  approvalTtlS: number; outputCapChars?: number;
  /** per-key accounting: a command keeps its session's container counted live */
  caps?: OwnerCaps;
  /** `host:pid` of this worker process, recorded as `executed_by` */
  workerId?: string;
};

const INTERRUPTED = 'the worker executing this command died mid-way; it was not run again';

type Loaded = Awaited<ReturnType<ProcessorDeps['ledger']['loadForExecution']>>;

export async function processCommand(d: ProcessorDeps, sid: string, index: number, signal?: AbortSignal, turn?: number): Promise<void> {
  const loaded = turn === undefined ? null : await d.ledger.loadForExecution(sid, index, turn);
  const rec = loaded ? loaded.record : await d.ledger.get(sid, index);
  if (!rec) return;
  switch (rec.status) {
    case 'queued': return handleQueued(d, rec, loaded ?? (await d.ledger.loadForExecution(sid, index, rec.turn)), signal);
    case 'awaiting_approval': return awaitApproval(d, rec, signal);
    case 'running': return interrupt(d, rec);
    default: return; // final already (e.g. skipped eagerly)
  }
}

/** Marks a command whose executor died `interrupted`; exported for the stalled-job handler. */
export async function interrupt(d: ProcessorDeps, rec: LedgerRecord): Promise<void> {
  const result: LedgerResult = { ...emptyResult(), error: INTERRUPTED, error_code: 'interrupted', output_summary: INTERRUPTED };
  const out = await d.ledger.transition(rec, {
    from: ['running'], to: 'interrupted', events: ['command_finished'],
    fields: { result, finished_at: new Date().toISOString() },
  });
  if (out.ok) {
    d.metrics.commandsFinished.inc({ status: 'interrupted', tool: rec.tool });
    await skipRestOfTurn(d.ledger, rec.session, rec.turn);
    // The dead worker's command may still run in the container: stop it, or the
    // session's next command would wait behind it (and it would change files unseen).
    await d.executor.cancelRunning(rec.session).catch(() => {});
  }
}

async function handleQueued(d: ProcessorDeps, rec: LedgerRecord, loaded: Loaded, signal?: AbortSignal): Promise<void> {
  const sid = rec.session;
  const { failure, command } = loaded;
  if (failure && failure.index < rec.index) {
    await skipOne(d.ledger, rec, skipReason(failure));
    return;
  }
  const session = await d.sessions.get(sid);
  if (!session || !command) {
    await refuse(d, rec, 'failed', 'internal', `session or command data missing for ${sid}#${rec.index}`);
    return;
  }
  if (loaded.deleted) {
    await skipOne(d.ledger, rec, 'skipped: the session was deleted');
    return;
  }
  const grants = loaded.grantsJson.map((g) => JSON.parse(g) as Grant);
  // An `allow` at enqueue stays `allow` (a session's layers never change,
  // grants only loosen) unless a symlink makes the path another one: checked
  // here, where the command is about to run anyway. A command that waits for
  // an operator is checked after the answer, right before it runs, so the
  // approval is not held up by starting a sandbox.
  // The executor checks that the paths resolve as written (no symlink) in
  // the same round trip as the side effect; when they do not, `run` judges
  // them as they resolve and tries once more.
  if (rec.decision === 'allow') return runVerified(d, rec, session, grants, command, ['queued'], null);
  const evaluation = d.gate.evaluate(session, command, grants);
  if (evaluation.decision === 'forbid') return refuse(d, rec, 'forbidden', 'forbidden', evaluation.reason || 'forbidden by policy');
  const action = d.gate.decide(evaluation, session, command, grants);
  if (action.action === 'refuse') return refuse(d, rec, 'forbidden', 'forbidden', action.reason ?? 'refused by policy');
  if (action.action === 'run') return runVerified(d, rec, session, grants, command, ['queued'], null);

  const state = await d.approvals.request({
    record: rec, command, evaluation, grants: d.gate.grantOptions(command, evaluation), ttlS: d.approvalTtlS, jobId: session.job_id,
  });
  const moved = await d.ledger.transition(rec, {
    from: ['queued'], to: 'awaiting_approval', unlessTurnFailed: true, events: ['approval_requested'],
    approval: publicOf(state), fields: { approval: ledgerApproval(state) },
  }, session.job_id);
  d.metrics.approvals.inc({ event: 'requested' });
  if (!moved.ok) {
    // Skipped or changed meanwhile: withdraw the request so nobody answers a dead token.
    await d.approvals.answer(state.token, 'reject', 'withdrawn: the command no longer waits', 'system');
    if ('turnFailed' in moved) await skipRestOfTurn(d.ledger, sid, rec.turn);
    return;
  }
  return awaitApproval(d, { ...rec, status: 'awaiting_approval', approval: ledgerApproval(state) }, signal);
}

async function awaitApproval(d: ProcessorDeps, rec: LedgerRecord, signal?: AbortSignal): Promise<void> {
  if (!rec.approval) return refuse(d, rec, 'failed', 'internal', 'awaiting approval without a token', ['awaiting_approval']);
  const state = await d.approvals.waitForAnswer(rec.approval.token, signal);
  const decided = ledgerApproval(state);
  d.metrics.approvals.inc({ event: state.status });
  if (state.status === 'approve' || state.status === 'approve_for_session') {
    const command = await d.ledger.command(rec.session, rec.index);
    if (!command) return refuse(d, rec, 'failed', 'internal', 'command data missing', ['awaiting_approval']);
    const session = await d.sessions.get(rec.session);
    if (!session) return refuse(d, rec, 'failed', 'internal', `session ${rec.session} missing`, ['awaiting_approval']);
    const grants = (await d.redis.lrange(d.keys.grants(rec.session), 0, -1)).map((g) => JSON.parse(g) as Grant);
    return runVerified(d, { ...rec, approval: decided }, session, grants, command, ['awaiting_approval'], state);
  }
  const reason = state.status === 'expired' ? 'approval timed out' : state.reason || 'rejected by operator';
  const result: LedgerResult = { ...emptyResult(), error: reason, error_code: 'rejected', output_summary: reason };
  const out = await d.ledger.transition(rec, {
    from: ['awaiting_approval'], to: 'rejected', events: ['approval_resolved', 'command_finished'],
    approval: publicOf(state), fields: { result, approval: decided, finished_at: new Date().toISOString() }, dropCommand: true,
  }, state.job_id);
  if (out.ok) {
    d.metrics.commandsFinished.inc({ status: 'rejected', tool: rec.tool });
    await skipRestOfTurn(d.ledger, rec.session, rec.turn);
  }
}

/**
 * Runs the command if its paths, as they resolve right now, pass the policy
 * (POLICY.md §7); else it ends `forbidden`. Checked once `running`, so the
 * operator's answer is recorded at once even when the check has to wait for
 * the sandbox to start.
 */
function runVerified(
  d: ProcessorDeps, rec: LedgerRecord, session: SessionMeta, grants: Grant[], command: Command,
  from: ('queued' | 'awaiting_approval')[], approval: ApprovalState | null,
): Promise<void> {
  const judge: Judge = (resolved) => judgeResolved(d.gate, session, grants, command, resolved, approval?.target);
  if (command.tool !== 'bash') return run(d, rec, command, from, approval, expectAsWritten(command), judge);
  return run(d, rec, command, from, approval, () => verifyResolvedPaths(d, session, grants, command, approval?.target));
}

type Judge = (resolved: Command) => PathVerdict;

/**
 * Executes with `expect`; when the executor answers `path_changed` (a
 * symlink made the paths resolve elsewhere) the resolved paths are judged and,
 * if the policy allows them, executed once more against them.
 */
async function executeJudged(d: ProcessorDeps, rec: LedgerRecord, command: Command, expect: ExpectedResolution | undefined, judge?: Judge): Promise<ExecutionResult> {
  const first = await d.executor.execute(rec.session, command, expect ? { expect } : {});
  if (first.error_code !== 'path_changed' || !first.resolved || !judge) return first;
  const { path, dest } = first.resolved;
  if (path === null || dest === null) {
    return { ...first, error_code: OUTSIDE, error: `${OUTSIDE}: ${first.error ?? 'a path leads outside /workspace through a symlink'}` };
  }
  const verdict = judge({ ...command, ...(path !== undefined ? { path } : {}), ...(dest !== undefined ? { dest } : {}) });
  if (!verdict.ok) return { ...first, error_code: verdict.code, error: verdict.reason };
  return d.executor.execute(rec.session, command, { expect: verdict.expect });
}

async function run(
  d: ProcessorDeps, rec: LedgerRecord, command: Command, from: ('queued' | 'awaiting_approval')[], approval: ApprovalState | null,
  expectOrCheck?: ExpectedResolution | (() => Promise<PathVerdict>), judge?: Judge,
): Promise<void> {
  const startedAt = new Date();
  const started = await d.ledger.transition(rec, {
    from, to: 'running', unlessTurnFailed: true,
    events: approval ? ['approval_resolved', 'command_started'] : ['command_started'],
    ...(approval ? { approval: publicOf(approval) } : {}),
    fields: { started_at: startedAt.toISOString(), ...(d.workerId ? { executed_by: d.workerId } : {}), ...(rec.approval ? { approval: rec.approval } : {}) },
  });
  if (!started.ok) {
    if ('turnFailed' in started) await skipRestOfTurn(d.ledger, rec.session, rec.turn);
    return;
  }
  d.metrics.queueWait.observe((startedAt.getTime() - Date.parse(rec.enqueued_at)) / 1000);
  const runningRec: LedgerRecord = { ...rec, status: 'running', started_at: startedAt.toISOString(), executed_by: d.workerId ?? null };
  let expect = typeof expectOrCheck === 'function' ? undefined : expectOrCheck;
  if (typeof expectOrCheck === 'function') {
    const verdict = await expectOrCheck();
    if (!verdict.ok) {
      const refused: ExecutionResult = { ok: false, tool: command.tool, status: 'failed', duration_ms: 0, error: verdict.reason, error_code: verdict.code };
      return finish(d, runningRec, refused);
    }
    expect = verdict.expect;
  }
  const owner = d.caps ? (await d.sessions.get(rec.session))?.owner ?? null : null;
  await d.caps?.touchLive(owner, rec.session);
  let result: ExecutionResult;
  try {
    // No signal here on purpose: a graceful shutdown lets a running command finish.
    result = await executeJudged(d, rec, command, expect, judge);
  } catch (err) {
    result = {
      ok: false, tool: command.tool, status: 'failed', duration_ms: Date.now() - startedAt.getTime(),
      error: `executor error: ${(err as Error).message}`, error_code: 'executor_error',
    };
  }
  await finish(d, runningRec, result);
}

async function finish(d: ProcessorDeps, rec: LedgerRecord, r: ExecutionResult): Promise<void> {
  const cap = d.outputCapChars ?? 64 * 1024;
  const out = capText(r.stdout, cap);
  const err = capText(r.stderr, cap);
  // A symlink out of the workspace found at execution is the hard invariant: refused, like `..`.
  const status = r.ok ? 'succeeded' : isRefusal(r.error_code) ? 'forbidden' : 'failed';
  const base = {
    error: r.ok ? null : r.error ?? `exit code ${r.exit_code ?? '?'}`, error_code: r.ok ? null : r.error_code ?? null,
    bytes_written: r.bytes_written ?? null, stdout: out.text, stderr: err.text,
    stdout_truncated: out.truncated || Boolean(r.stdout_truncated), stderr_truncated: err.truncated || Boolean(r.stderr_truncated),
    exit_code: r.exit_code ?? null, duration_ms: r.duration_ms,
  };
  const result: LedgerResult = { ...base, output_summary: summarize(rec.tool, { ...base, status }) };
  const moved = await d.ledger.transition(rec, {
    from: ['running'], to: status, events: ['command_finished'], dropCommand: (rec.content_size ?? 0) > 64 * 1024,
    fields: { result, finished_at: new Date().toISOString() },
  });
  d.metrics.execution.observe({ tool: rec.tool }, r.duration_ms / 1000);
  if (moved.ok) d.metrics.commandsFinished.inc({ status, tool: rec.tool });
  if (moved.ok && status !== 'succeeded') await skipRestOfTurn(d.ledger, rec.session, rec.turn);
}

async function refuse(
  d: ProcessorDeps, rec: LedgerRecord, status: 'forbidden' | 'failed', code: string, reason: string,
  from: ('queued' | 'awaiting_approval')[] = ['queued'],
): Promise<void> {
  const result: LedgerResult = { ...emptyResult(), error: reason, error_code: code, output_summary: reason };
  const out = await d.ledger.transition(rec, {
    from, to: status, events: ['command_finished'], dropCommand: true, fields: { result, finished_at: new Date().toISOString() },
  });
  if (out.ok) {
    d.metrics.commandsFinished.inc({ status, tool: rec.tool });
    await skipRestOfTurn(d.ledger, rec.session, rec.turn);
  }
}

export function ledgerApproval(s: ApprovalState): LedgerApproval {
  return {
    token: s.token, requested_at: s.created_at, expires_at: s.expires_at,
    decided_by: s.decided_by ?? null,
    decision: s.status === 'pending' ? null : s.status,
    reason: s.reason ?? null, decided_at: s.decided_at ?? null,
  };
}

export function publicOf(s: ApprovalState): PublicApproval {
  const { index: _index, ...rest } = s;
  return rest;
}
