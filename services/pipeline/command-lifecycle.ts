import type { Command, CommandFlow } from '../protocol/index.ts';
import { log, reasonOf, withIds } from '../log/index.ts';
import { ledgerApproval, publicOf, type ApprovalState } from './approvals.ts';
import type { Sandboxes } from './sandboxes.ts';
import type { Ledger, RunAction, TransitionOutcome, TransitionSpec } from './ledger.ts';
import type { RunHandover } from './execution-load.ts';
import type { EvaluationData, LedgerRecord, LedgerResult, LedgerStatus } from './ledger-record.ts';
import type { PipelineMetrics } from './metrics.ts';
import { hasCutBody } from './record-body.ts';
import type { Admission } from './lifecycle/admit.ts';
import { endedResult, interruptedResult, skippedResult, skipReason } from './lifecycle/results.ts';
import { transition, type LifecycleEvent } from './lifecycle/table.ts';

// The one writer of command statuses: every change goes through the pure
// table (lifecycle/table.ts), then the ledger's `transition` script (the
// atomic compare-and-set, with its events), then the metrics, the log line
// and the turn's skipping (PROTOCOL.md §5.3). Enqueue, the worker, recovery
// and the worker pool all call this class; none writes a status itself.

export type ApplyInput = {
  /** the result of a final status */
  result?: LedgerResult;
  /** the approval this change requests or resolves */
  approval?: ApprovalState;
  /** `running`: when it started and which process runs it */
  started?: { at: Date; by?: string };
  /**
   * The run job making the change (session-run.ts): refused (`notOwner`) when a re-delivered run took the session's
   * list over at this record, so a run that lost its list changes nothing more. A finish is sent without: it
   * records a side effect that happened.
   */
  run?: string | undefined;
  /**
   * job_id written into the events. Only the approval events and enqueue-time
   * skips have carried it; the others write null, which SSE readers rely on.
   */
  eventJobId?: string | null;
  /** job_id for log lines (always wanted there) */
  jobId?: string | null;
};

export type LifecycleDeps = {
  ledger: Ledger;
  metrics: Pick<PipelineMetrics, 'commandsEnqueued' | 'commandsFinished' | 'queueWait' | 'execution' | 'approvals'>;
  /** stops a dead worker's command still running in the sandbox */
  sandboxes: Pick<Sandboxes, 'cancelRunning'>;
};

export type CreateInput = {
  session: string; turn: number; command: Command; flow: CommandFlow; admission: Admission; jobId: string | null;
  /** when its tag was parsed, when the policy decided (the record's timings) */
  parsedAt?: Date; admittedAt?: Date;
  /** what the model said before it: kept with a record that may ask an operator (approval-context.ts) */
  precedingText?: string | undefined;
  /** the running job `admission` was decided under (sessions.ts jobGuard) */
  jobGuard: string;
};
/** `gone`, `stale_job`: nothing was written (see Ledger.create); the caller decides again or refuses */
export type Created = { kind: 'created'; record: LedgerRecord; run: RunAction; handover?: RunHandover } | { kind: 'duplicate' } | { kind: 'gone' } | { kind: 'stale_job'; job: string | null };

export class CommandLifecycle {
  readonly ledger: Ledger;
  readonly #d: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.ledger = deps.ledger;
    this.#d = deps;
  }

  /** Writes the record `queued`, or final at once: `forbidden` when admission refused it, `skipped` when its turn failed. */
  async create(input: CreateInput): Promise<Created> {
    const { admission: a } = input;
    const common = {
      session: input.session, turn: input.turn, command: input.command, flow: input.flow, evaluation: a.evaluation as EvaluationData, jobId: input.jobId,
      ...(input.parsedAt ? { parsedAt: input.parsedAt } : {}), ...(input.admittedAt ? { admittedAt: input.admittedAt } : {}),
      ...(input.precedingText ? { precedingText: input.precedingText } : {}), jobGuard: input.jobGuard,
    };
    let out = a.action === 'refuse'
      ? await this.ledger.create({ ...common, status: 'forbidden', result: endedResult(a.reason, a.code) })
      : await this.ledger.create({ ...common, status: 'queued' });
    if (out.kind === 'turn_failed') {
      const failure = await this.ledger.turnFailure(input.session, input.turn);
      out = await this.ledger.create({ ...common, status: 'skipped', result: skippedResult(skipReason(failure ?? { id: '?' })) });
    }
    if (out.kind === 'duplicate') return { kind: 'duplicate' };
    if (out.kind === 'gone' || out.kind === 'stale_job') return out;
    if (out.kind !== 'created') throw new Error('unreachable: the ledger refused a skipped record');
    this.#d.metrics.commandsEnqueued.inc({ status: out.record.status });
    if (out.record.status === 'forbidden') {
      logEnded(out.record, input.jobId);
      await this.skipRestOfTurn(input.session, input.turn, input.jobId);
    }
    return { kind: 'created', record: out.record, run: out.run, ...(out.handover ? { handover: out.handover } : {}) };
  }

  /**
   * Applies `event` to the record as read (`rec.status` is the expected
   * status of the compare-and-set). Throws IllegalTransition for a pair the
   * table does not have. A refusal because the turn failed meanwhile skips
   * the rest of the turn, like a failure does.
   */
  async apply(rec: LedgerRecord, event: LifecycleEvent, input: ApplyInput = {}): Promise<TransitionOutcome> {
    const t = transition(rec.status, event);
    const out = await this.ledger.transition(rec, {
      from: [t.from], to: t.to, unlessTurnFailed: t.guardedByTurn, events: [...t.events],
      ...(input.run ? { runOwner: input.run } : {}),
      ...(input.approval ? { approval: publicOf(input.approval) } : {}),
      fields: fieldsOf(t.to, input),
      dropCommand: t.dropCommand === 'always' || (t.dropCommand === 'if_large' && hasCutBody(rec)),
    }, input.eventJobId ?? null);
    if (out.ok) this.#observe(out.record, input);
    if ((out.ok && t.skipsRest) || 'turnFailed' in out) await this.skipRestOfTurn(rec.session, rec.turn);
    return out;
  }

  /** `rec`: the record as the transition left it (its new status, its result). */
  #observe(rec: LedgerRecord, input: ApplyInput): void {
    const m = this.#d.metrics;
    const to = rec.status;
    if (to === 'running' && input.started) m.queueWait.observe((input.started.at.getTime() - Date.parse(rec.enqueued_at)) / 1000);
    if (to === 'running' || to === 'awaiting_approval') return;
    m.commandsFinished.inc({ status: to, tool: rec.tool });
    if (to !== 'succeeded' && to !== 'skipped') logEnded(rec, input.jobId ?? input.eventJobId);
  }

  /** Time spent in the sandbox, observed whether or not the finish wins its race. */
  observeExecution(tool: string, durationMs: number): void {
    this.#d.metrics.execution.observe({ tool }, durationMs / 1000);
  }

  approvalRequested(): void { this.#d.metrics.approvals.inc({ event: 'requested' }); }
  approvalAnswered(status: ApprovalState['status']): void { this.#d.metrics.approvals.inc({ event: status }); }

  /** A command whose worker died: `interrupted`, never run again; whatever it left running in the sandbox is stopped. */
  async interrupt(rec: LedgerRecord, run?: string): Promise<void> {
    const out = await this.apply(rec, 'interrupt', { result: interruptedResult(), run });
    if (!out.ok) return;
    // Else the session's next command would wait behind it (and it would change files unseen).
    await this.#d.sandboxes.cancelRunning(rec.session).catch((err: unknown) => {
      withIds({ session_id: rec.session, command_id: rec.id }).warn({ reason: reasonOf(err) }, 'could not stop an interrupted command');
    });
  }

  async skip(rec: LedgerRecord, reason: string, eventJobId: string | null = null, run?: string): Promise<boolean> {
    return (await this.apply(rec, 'skip', { result: skippedResult(reason), eventJobId, run })).ok;
  }

  /** Marks `skipped` every queued command of the turn after its earliest failure; returns how many. */
  async skipRestOfTurn(sid: string, turn: number, eventJobId: string | null = null): Promise<number> {
    const failure = await this.ledger.turnFailure(sid, turn);
    if (!failure) return 0;
    const later = (await this.ledger.turnIndexes(sid, turn)).filter((i) => i > failure.index);
    const statuses = await this.ledger.statuses(sid, later);
    const queued = later.filter((_, j) => statuses[j] === 'queued');
    let skipped = 0;
    // The compare-and-set makes a skip and a start mutually exclusive, so this may race the worker.
    for (const rec of await this.ledger.many(sid, queued)) if (await this.skip(rec, skipReason(failure), eventJobId)) skipped += 1;
    return skipped;
  }

  /** A failure without a record (a parse error, a stopped job) fails the turn from here on. */
  async failTurn(sid: string, turn: number, label: string): Promise<void> {
    await this.ledger.failTurn(sid, turn, label);
    log().debug({ session_id: sid, turn, label }, 'turn failed without a record');
    await this.skipRestOfTurn(sid, turn);
  }
}

/** One line per command that ended badly (failed, forbidden, rejected, interrupted), findable by its ids. */
function logEnded(rec: LedgerRecord, jobId: string | null | undefined): void {
  withIds({ job_id: jobId, session_id: rec.session, command_id: rec.id }).info(
    { index: rec.index, turn: rec.turn, status: rec.status, error_code: rec.error_code, reason: rec.error },
    `command ${rec.status}`,
  );
}

function fieldsOf(to: LedgerStatus, input: ApplyInput): NonNullable<TransitionSpec['fields']> {
  const fields: NonNullable<TransitionSpec['fields']> = {};
  if (input.approval) fields.approval = ledgerApproval(input.approval);
  if (to === 'running' && input.started) {
    fields.started_at = input.started.at.toISOString();
    if (input.started.by) fields.executed_by = input.started.by;
  }
  if (input.result) {
    fields.result = input.result;
    fields.finished_at = new Date().toISOString();
  }
  return fields;
}
