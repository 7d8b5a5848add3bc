// A job from start to end: seed files (not commands), then model calls until a
// turn ends normally, a limit is hit, or the job is cancelled. Keeps the job's
// figures and emits the job-level events (API.md, jobs).
import { FAILURE_STATUSES, PipelineError, type JobEmit, type LedgerRecord, type LedgerStatus, type Pipeline } from '../pipeline/index.ts';
import { targetOf } from '../protocol/index.ts';
import { withIds } from '../log/index.ts';
import { editNote } from './edit-note.ts';
import { feedbackMessage, unansweredApproval } from './feedback.ts';
import { FLOWS } from './flows.ts';
import { JobOpening, refreshCounts } from './job-opening.ts';
import type { JobState, JobTask } from './job-state.ts';
import type { AgentMessage, StreamFn } from './messages.ts';
import { beforeModelCall, pendingSteering, type JobControl } from './steering.ts';
import { decideTurnOutcome, type TurnOutcome } from './turn-outcome.ts';
import { ModelError, runTurn, startCall, type NativeResult, type TurnPipeline, type TurnReport } from './turn-runner.ts';
import { JobValidation } from './validation-round.ts';
import { turnFailure, Watchdog } from './watchdog.ts';

/** The part of the pipeline a job uses. */
export type JobPipeline = TurnPipeline & Pick<Pipeline, 'seedFiles' | 'nextTurn' | 'entries' | 'uninjected' | 'markInjected'> & {
  approvals: Pick<Pipeline['approvals'], 'listPending' | 'answer'>;
};

export interface JobRunnerDeps<V extends JobState> {
  pipeline: JobPipeline;
  /** One model call (the endpoint's `stream`). */
  stream: StreamFn;
  /** This job's events. */
  emit: JobEmit;
  /** Persists the view; called after every change. Must not throw. */
  save(view: V): Promise<void>;
  /** Steering messages and pause (steering.ts); none: the job runs unsteered. */
  control?: JobControl;
  /**
   * The job's hold on its workspace: `changing` as each model call's turn starts (its commands may change
   * files, whether or not the turn completes), `settled` when a turn that ends the job unless a message steers it
   * on has its commands final and no validator follows. Between a `settled` and the next `changing`, nothing of
   * the job runs in the sandbox: its end may read the workspace ahead.
   */
  onWorkspace?: (state: 'changing' | 'settled') => void;
}

/** Statuses whose ids the model may not reuse in later turns (PROTOCOL.md §5.3): the failed ones and the skipped ones. */
const BURNT: ReadonlySet<LedgerStatus> = new Set<LedgerStatus>([...FAILURE_STATUSES, 'skipped']);

export class JobStopped extends Error {
  constructor(readonly status: 'failed' | 'cancelled', message: string) {
    super(message);
  }
}

/** Runs the job to its end; the returned view is final. `signal` aborts with reason 'cancelled', 'timeout' or 'shutdown'. */
export async function runJob<V extends JobState>(deps: JobRunnerDeps<V>, view: V, task: JobTask, signal: AbortSignal): Promise<V> {
  const logger = withIds({ job_id: view.job_id, session_id: view.session_id });
  view.status = 'running';
  view.started_at = new Date().toISOString();
  const opening = new JobOpening(deps, view, logger);
  let countsFresh = false;
  let endedWith: unknown = null;
  try {
    await seedFiles(deps, view, task, signal, opening);
    countsFresh = await runTurns(deps, view, task, signal, opening);
    view.status = 'succeeded';
  } catch (err) {
    endedWith = err;
    if (!(err instanceof JobStopped)) logger.error({ err }, 'job failed on an infrastructure error');
    const stopped = err instanceof JobStopped ? err : new JobStopped('failed', `infrastructure error: ${(err as Error).message}`);
    view.status = stopped.status;
    view.error = stopped.message;
    // Cancel and failures drain nothing further: queued commands of the open turn are skipped.
    await skipOpenTurn(deps.pipeline, view.session_id, `the job stopped: ${stopped.message}`)
      .catch((e: unknown) => logger.error({ err: e }, 'skipping the open turn of the stopped job failed'));
  } finally {
    await opening.close(logger, endedWith);
    view.finished_at = new Date().toISOString();
    // After a last turn that counted its drained ledger, nothing has run since (a read less at every job's end).
    if (!countsFresh) await refreshCounts(deps.pipeline, view).catch((err: unknown) => logger.warn({ err }, 'final command counts not refreshed'));
  }
  return view;
}

async function seedFiles<V extends JobState>(deps: JobRunnerDeps<V>, view: V, task: JobTask, signal: AbortSignal, opening: JobOpening): Promise<void> {
  if (!task.files || Object.keys(task.files).length === 0) return;
  await opening.wait();
  try {
    view.files_seeded = await deps.pipeline.seedFiles(view.session_id, task.files, signal);
  } catch (err) {
    if (signal.aborted) throw stoppedBy(signal, view);
    throw new JobStopped('failed', `seeding files failed: ${(err as Error).message}`);
  }
  await deps.save(view);
}

/**
 * Model calls until one ends the job (and its validator, if any, passes);
 * throws JobStopped when a limit, the watchdog or an abort ends it first.
 * True when the view's command counts are those of the ledger as it ends
 * (no validator ran commands after the last turn counted them).
 */
async function runTurns<V extends JobState>(deps: JobRunnerDeps<V>, view: V, task: JobTask, signal: AbortSignal, opening: JobOpening): Promise<boolean> {
  const flow = FLOWS[view.flow];
  const history: AgentMessage[] = [{ role: 'system', text: flow.systemPrompt }, { role: 'user', kind: 'task', text: taskMessage(task) }];
  const watchdog = new Watchdog(view.limits.max_failed_turns_in_a_row);
  const validation = task.validate ? new JobValidation(task.validate, view) : null;
  let issued = 0;
  let brokenInARow = 0;
  for (let call = 1; call <= view.limits.max_turns; call++) {
    if (signal.aborted) throw stoppedBy(signal, view);
    await beforeModelCall(deps.control, history, signal).catch((err: unknown) => {
      throw signal.aborted ? stoppedBy(signal, view) : err;
    });
    const { report, outcome } = await oneTurn(deps, view, { call, history: [...history], issued, signal, validated: validation !== null, opening });
    issued += report.commandsIssued;
    // A stream broken off mid-turn gets one more call, told what ran; twice in a row is the model's failure.
    brokenInARow = report.stop.kind === 'stream_broken' ? brokenInARow + 1 : 0;
    if (report.stop.kind === 'stream_broken' && brokenInARow > 1) throw new JobStopped('failed', `model error: the stream broke off twice in a row (${report.stop.error})`);
    const stuck = watchdog.observe(turnFailure(outcome, report.nativeResults));
    if (stuck) throw new JobStopped('failed', stuck);
    let validationFailed: string | null = null;
    if (outcome.kind === 'done') {
      validationFailed = await validate(deps, view, validation, signal);
      if (validationFailed === null) return validation === null;
    }
    await feedBack(deps.pipeline, view.session_id, history, report, outcome, validationFailed);
  }
  throw new JobStopped('failed', `max_turns (${view.limits.max_turns}) reached before the model finished`);
}

type TurnContext = { call: number; history: AgentMessage[]; issued: number; signal: AbortSignal; validated: boolean; opening: JobOpening };

async function oneTurn<V extends JobState>(deps: JobRunnerDeps<V>, view: V, c: TurnContext): Promise<{ report: TurnReport; outcome: TurnOutcome }> {
  const { pipeline } = deps;
  const sid = view.session_id;
  deps.onWorkspace?.('changing');
  const flow = FLOWS[view.flow];
  // Sent before the turn opens, so that the request travels while it does; read only once it is open.
  const call = startCall(deps.stream, flow, c.history, c.signal);
  const { turn, burntIds } = await openTurn(deps, view, c).catch(async (err: unknown) => {
    await call.drop(err);
    throw err;
  });
  let report: TurnReport;
  try {
    report = await runTurn(deps, {
      flow, sessionId: sid, jobId: view.job_id, turn, messages: c.history, commandBudget: view.limits.max_commands - c.issued, burntIds, signal: c.signal,
      control: deps.control, call,
    });
  } catch (err) {
    if (c.signal.aborted) throw stoppedBy(c.signal, view);
    if (err instanceof ModelError) throw new JobStopped('failed', `model error: ${err.message}`);
    throw err;
  }
  view.turns += 1;
  view.api_calls += 1;
  addUsage(view, report);
  view.final_text = report.visibleText;
  if (c.signal.aborted) throw stoppedBy(c.signal, view);
  if (report.stop.kind === 'budget_exceeded') {
    await pipeline.failTurn(sid, turn, 'max_commands reached');
    throw new JobStopped('failed', `max_commands (${view.limits.max_commands}) exceeded`);
  }
  if (report.stop.kind === 'too_many_commands') {
    await pipeline.failTurn(sid, turn, 'too_many_commands');
    throw new JobStopped('failed', `too_many_commands: a model call issued more than ${report.stop.limit} commands (THINKFLOW_MAX_COMMANDS_PER_TURN)`);
  }
  let outcome = decideTurnOutcome({ records: report.records, stop: report.stop, nativeCalls: report.toolCalls.length });
  if (outcome.kind === 'done' && !c.validated) deps.onWorkspace?.('settled');
  // Independent reads, and then two writes, each pair sent together: the turn's end is on every job's path.
  const [steered] = await Promise.all([outcome.kind === 'done' && pendingSteering(deps.control), refreshCounts(pipeline, view)]);
  if (steered) outcome = { kind: 'steered' };
  const ended = outcome.kind === 'interrupt' ? outcome.interruption.kind : outcome.kind;
  await Promise.all([deps.emit({ type: 'turn_ended', turn, api_call: c.call, outcome: ended }), deps.save(view)]);
  return { report, outcome };
}

/** The turn's number, `turn_started`, and the ids a command may not take again (earlier failed or skipped ones). */
async function openTurn<V extends JobState>(deps: JobRunnerDeps<V>, view: V, c: TurnContext): Promise<{ turn: number; burntIds: string[] }> {
  const { session_id: sid } = view;
  const call = c.call;
  const [turn] = await Promise.all([deps.pipeline.nextTurn(sid).catch(quotaStops), c.opening.wait()]);
  // Stopped while the turn's number was taken (or the job's opening saved): no turn_started for a call nobody reads.
  if (c.signal.aborted) throw stoppedBy(c.signal, view);
  const [, entries] = await Promise.all([deps.emit({ type: 'turn_started', turn, api_call: call }), deps.pipeline.entries(sid)]);
  return { turn, burntIds: entries.filter((r) => r.turn > 0 && r.flow !== 'native' && BURNT.has(r.status)).map((r) => r.id) };
}

/** The key went over its Redis budget mid-job: the job ends with that code, not as an infrastructure error. */
function quotaStops(err: unknown): never {
  if (err instanceof PipelineError && err.code === 'storage_quota_exceeded') throw new JobStopped('failed', `storage_quota_exceeded: ${err.message}`);
  throw err;
}

/** Null when the job is done (its validator passed, or it has none); else the [THINKFLOW VALIDATION FAILED] block. */
async function validate<V extends JobState>(deps: JobRunnerDeps<V>, view: V, validation: JobValidation | null, signal: AbortSignal): Promise<string | null> {
  if (!validation) return null;
  const verdict = await validation.round(deps, signal).catch((err: unknown) => {
    if (signal.aborted) throw stoppedBy(signal, view);
    return quotaStops(err);
  });
  await deps.save(view);
  if (verdict.kind === 'failed') throw new JobStopped('failed', verdict.error);
  return verdict.kind === 'retry' ? verdict.feedback : null;
}

/** The turn goes into the history, with what the model must hear before its next call (§5.6). */
async function feedBack(
  pipeline: JobPipeline, sid: string, history: AgentMessage[], report: TurnReport, outcome: TurnOutcome, validationFailed: string | null,
): Promise<void> {
  history.push({ role: 'assistant', visibleText: report.visibleText, toolCalls: report.toolCalls, interrupted: outcome.kind === 'interrupt' });
  for (const r of report.nativeResults) history.push({ role: 'tool', toolCallId: r.call.id, text: nativeResultText(r) });
  // Native results reached the model as tool messages; everything else un-injected goes in one user message.
  const uninjected = await pipeline.uninjected(sid);
  const nativeIds = new Set(report.nativeResults.map((r) => r.call.id));
  const blocks = feedbackMessage(uninjected.filter((r) => !(r.flow === 'native' && nativeIds.has(r.id))), outcome.kind === 'interrupt' ? outcome.interruption : null);
  const feedback = [blocks, validationFailed].filter((b) => b !== null).join('\n\n');
  if (feedback) history.push({ role: 'user', kind: 'feedback', text: feedback });
  await pipeline.markInjected(sid, uninjected.map((r) => r.index));
}

function taskMessage(task: JobTask): string {
  const files = Object.keys(task.files ?? {});
  if (files.length === 0) return task.task;
  return `${task.task}\n\nFiles already in the workspace: ${files.join(', ')}`;
}

function nativeResultText(r: NativeResult): string {
  if (!r.record) return `error: ${r.error}`;
  const rec = r.record;
  const unanswered = unansweredApproval(rec);
  const head = unanswered ? `${rec.status}: ${unanswered}` : `${rec.status}${rec.exit_code !== null ? ` (exit code ${rec.exit_code})` : ''}${rec.error ? `: ${rec.error}` : ''}`;
  return [head, ...editNote(rec), rec.stdout ?? '', rec.stderr ? `stderr:\n${rec.stderr}` : ''].filter(Boolean).join('\n');
}

function stoppedBy(signal: AbortSignal, view: JobState): JobStopped {
  if (signal.reason === 'cancelled') return new JobStopped('cancelled', 'cancelled by request');
  if (signal.reason === 'shutdown') return new JobStopped('failed', 'the service shut down before the job finished');
  return new JobStopped('failed', `timeout_s (${view.limits.timeout_s}) exceeded`);
}

/** Nothing of a stopped job runs later: queued commands are skipped, pending approvals rejected. */
async function skipOpenTurn(pipeline: JobPipeline, sid: string, reason: string): Promise<void> {
  const open = (await pipeline.entries(sid)).filter((r) => r.status === 'queued' || r.status === 'awaiting_approval');
  for (const turn of new Set(open.map((r) => r.turn))) await pipeline.failTurn(sid, turn, 'job stopped');
  for (const a of await pipeline.approvals.listPending()) {
    if (a.session_id === sid) await pipeline.approvals.answer(a.token, 'reject', reason, 'thinkflow');
  }
}

/** A job's usage is estimated as soon as one of its calls was (API.md: `"estimated": true`). */
function addUsage(view: JobState, report: TurnReport): void {
  view.usage.prompt_tokens += report.usage.prompt_tokens;
  view.usage.completion_tokens += report.usage.completion_tokens;
  view.usage.total_tokens = view.usage.prompt_tokens + view.usage.completion_tokens;
  if (report.usage.estimated) view.usage.estimated = true;
}

/** A one-line summary per ledger record, for CLIs and the demo. */
export function ledgerSummary(records: readonly LedgerRecord[]): string[] {
  return records.map((r) => `${r.id.padStart(4)} ${r.tool.padEnd(6)} ${r.status.padEnd(10)} ${targetOf(r)}${r.error ? `  (${r.error})` : ''}`);
}
