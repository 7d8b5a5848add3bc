import { withIds } from '../log/index.ts';
import type { Evaluation } from '../policy/index.ts';
import type { Approvals } from './approvals.ts';
import { ledgerApproval, type ApprovalState } from './approvals.ts';
import { approvalExtras } from './approval-extras.ts';
import type { CommandLifecycle } from './command-lifecycle.ts';
import type { ExecutionLoad } from './execution-load.ts';
import type { LedgerRecord, LedgerResult } from './ledger-record.ts';
import { admit } from './lifecycle/admit.ts';
import { endedResult, internalResult, rejectedResult, SESSION_DELETED, skipReason } from './lifecycle/results.ts';
import { runCommand, type OnFinishSent, type RunContext, type RunOptions, type RunPorts } from './run-command.ts';
import type { Sessions } from './sessions.ts';

// What a worker does with one job. The ledger status read first decides
// everything, which is what makes a re-delivered (stalled) job safe:
//   queued            → admission (policy, grants, approval mode), then running → final
//   awaiting_approval → wait again on the same token (no side effect happened)
//   running           → the previous worker died mid-way: interrupted, never re-run
//   final             → nothing to do
// `signal` only cuts approval waits short (ApprovalWaitAborted): the caller
// then hands the job back to the queue, still at its head.

export type ProcessorPorts = RunPorts & { sessions: Pick<Sessions, 'get' | 'withRunningJob'>; approvals: Approvals };
export type ProcessorOptions = RunOptions & { approvalTtlS: number };

type Loaded = ExecutionLoad;
/**
 * How a run job asks for one command. `load`: what its step read with the command's name (execution-load.ts), else
 * read here; `onFinishSent`: see run-command.ts, called only when the command runs now (not after an approval wait);
 * `run`: the run's id, so a run that lost its list changes nothing of the command (ApplyInput.run).
 */
export type ProcessStep = { signal?: AbortSignal; load?: ExecutionLoad; onFinishSent?: OnFinishSent; run?: string };

export class Processor {
  readonly #p: ProcessorPorts;
  readonly #opts: ProcessorOptions;

  constructor(ports: ProcessorPorts, opts: ProcessorOptions) {
    this.#p = ports;
    this.#opts = opts;
  }

  get lifecycle(): CommandLifecycle { return this.#p.lifecycle; }

  async process(sid: string, index: number, step: ProcessStep = {}): Promise<void> {
    const loaded = step.load ?? (await this.#p.lifecycle.ledger.loadForExecution(sid, index));
    const rec = loaded.record;
    if (!rec) return;
    switch (rec.status) {
      case 'queued': return this.#queued(rec, loaded, step);
      case 'awaiting_approval': return this.#awaitApproval(rec, step);
      case 'running': return this.#p.lifecycle.interrupt(rec, step.run);
      default: return; // final already (e.g. skipped eagerly)
    }
  }

  async #queued(rec: LedgerRecord, loaded: Loaded, step: ProcessStep): Promise<void> {
    const { command } = loaded;
    const life = this.#p.lifecycle;
    const session = await this.#p.sessions.withRunningJob(rec.session, loaded.runningJob);
    if (!session || !command) return this.#fail(rec, internalResult(`session or command data missing for ${rec.session}#${rec.index}`), step.run);
    if (loaded.deleted) { await life.skip(rec, SESSION_DELETED, null, step.run); return; }
    const ctx: RunContext = { rec, session, grants: loaded.grants, command, ...(step.run ? { run: step.run } : {}) };
    // An `allow` at enqueue stays `allow` (a session's layers never change,
    // grants only loosen) unless a symlink makes the path another one: that
    // is checked right before the side effect anyway. `start` itself refuses
    // it if its turn failed at an earlier command (it is then skipped).
    if (rec.decision === 'allow') return this.#run(ctx, null, step.onFinishSent);
    const failure = await life.ledger.turnFailure(rec.session, rec.turn);
    if (failure && failure.index < rec.index) { await life.skip(rec, skipReason(failure), null, step.run); return; }
    const admission = admit(this.#p.gate, session, command, loaded.grants);
    if (admission.action === 'run') return this.#run(ctx, null);
    if (admission.action === 'ask') return this.#ask(ctx, admission.evaluation, step);
    await life.apply(rec, 'forbid', { result: endedResult(admission.reason, admission.code), jobId: session.job_id, run: step.run });
  }

  async #ask(ctx: RunContext, evaluation: Evaluation, step: ProcessStep): Promise<void> {
    const { rec, session, command } = ctx;
    const { approvals, gate, lifecycle } = this.#p;
    const extras = await approvalExtras({ sandboxes: this.#p.sandboxes, ledger: lifecycle.ledger }, rec, command);
    const state = await approvals.request({
      record: rec, command, evaluation, grants: gate.grantOptions(command, evaluation), ttlS: this.#opts.approvalTtlS, jobId: session.job_id, ...extras,
    });
    const moved = await lifecycle.apply(rec, 'ask', { approval: state, eventJobId: session.job_id, run: ctx.run });
    lifecycle.approvalRequested();
    if (!moved.ok) {
      // Skipped or changed meanwhile: withdraw the request so nobody answers a dead token.
      await approvals.answer(state.token, 'reject', 'withdrawn: the command no longer waits', 'system');
      return;
    }
    return this.#awaitApproval(moved.record, step);
  }

  async #awaitApproval(rec: LedgerRecord, step: ProcessStep): Promise<void> {
    if (!rec.approval) return this.#fail(rec, internalResult('awaiting approval without a token'), step.run);
    const { approvals, lifecycle, sessions, sandboxes } = this.#p;
    // The operator may take minutes: the sandbox is paused meanwhile (nothing runs there), and the command's execute resumes it.
    void sandboxes.pause?.(rec.session).catch((err: unknown) => withIds({ session_id: rec.session }).warn({ err }, 'pausing the sandbox for an approval wait failed; it stays running'));
    const state = await approvals.waitForAnswer(rec.approval.token, step.signal);
    lifecycle.approvalAnswered(state.status);
    if (state.status !== 'approve' && state.status !== 'approve_for_session' && state.status !== 'approve_edited') return this.#reject(rec, state, step.run);
    sandboxes.prewake?.(rec.session); // thawed while the command and its grants are read back
    // An edit was written into the record with the answer (approval-edit.ts): what runs, and the record's events, are the edited ones.
    if (state.status === 'approve_edited') rec = (await lifecycle.ledger.get(rec.session, rec.index)) ?? rec;
    const command = await lifecycle.ledger.command(rec.session, rec.index);
    if (!command) return this.#fail(rec, internalResult('command data missing'), step.run);
    const session = await sessions.get(rec.session);
    if (!session) return this.#fail(rec, internalResult(`session ${rec.session} missing`), step.run);
    const grants = await lifecycle.ledger.grants(rec.session);
    return this.#run({ rec: { ...rec, approval: ledgerApproval(state) }, session, grants, command, ...(step.run ? { run: step.run } : {}) }, state);
  }

  async #reject(rec: LedgerRecord, state: ApprovalState, run?: string): Promise<void> {
    const reason = state.status === 'expired' ? 'approval timed out' : state.reason || 'rejected by operator';
    await this.#p.lifecycle.apply(rec, 'reject', { result: rejectedResult(reason), approval: state, eventJobId: state.job_id, run });
  }

  async #fail(rec: LedgerRecord, result: LedgerResult, run?: string): Promise<void> {
    await this.#p.lifecycle.apply(rec, 'fail', { result, run });
  }

  #run(ctx: RunContext, approval: ApprovalState | null, onFinishSent?: OnFinishSent): Promise<void> {
    return runCommand(this.#p, ctx, approval, this.#opts, onFinishSent);
  }
}
