// A job from start to end: seed files (not commands), then model calls until a turn ends
// normally, a limit is hit, or the job is cancelled. Keeps the job's figures
// and emits the job-level events (API.md, jobs).
import type { LedgerRecord } from '../pipeline/ledger-record.ts';
import type { Pipeline } from '../pipeline/pipeline.ts';
import type { JobEvents } from '../jobs/job-events.ts';
import type { JobRequest, JobView } from '../jobs/job-schemas.ts';
import { feedbackMessage, targetOf } from './feedback.ts';
import { FLOWS } from './flows.ts';
import { toLlmMessages, type AgentMessage } from './messages.ts';
import type { ModelEndpoint } from './model-client.ts';
import { decideTurnOutcome } from './turn-outcome.ts';
import { ModelError, runTurn, type NativeResult, type TurnReport } from './turn-runner.ts';

export interface JobRunnerDeps {
  pipeline: Pipeline;
  events: JobEvents;
  endpoint: ModelEndpoint;
  /** Persists the view; called after every change. Must not throw. */
  save(view: JobView): Promise<void>;
}

/** Statuses whose ids the model may not reuse in later turns (PROTOCOL.md §5.3). */
const BURNT: ReadonlySet<string> = new Set(['failed', 'skipped', 'forbidden', 'rejected', 'interrupted']);

export class JobStopped extends Error {
  constructor(readonly status: 'failed' | 'cancelled', message: string) {
    super(message);
  }
}

function taskMessage(request: JobRequest): string {
  const files = Object.keys(request.files ?? {});
  if (files.length === 0) return request.task;
  return `${request.task}\n\nFiles already in the workspace: ${files.join(', ')}`;
}

function nativeResultText(r: NativeResult): string {
  if (!r.record) return `error: ${r.error}`;
  const rec = r.record;
  const head = `${rec.status}${rec.exit_code !== null ? ` (exit code ${rec.exit_code})` : ''}${rec.error ? `: ${rec.error}` : ''}`;
  return [head, rec.stdout ?? '', rec.stderr ? `stderr:\n${rec.stderr}` : ''].filter(Boolean).join('\n');
}

/** Runs the job to its end; the returned view is final. `signal` aborts with reason 'cancelled' or 'timeout'. */
export async function runJob(deps: JobRunnerDeps, view: JobView, request: JobRequest, signal: AbortSignal): Promise<JobView> {
  const { pipeline, events } = deps;
  const sid = view.session_id;
  const flow = FLOWS[view.flow];
  view.status = 'running';
  view.started_at = new Date().toISOString();
  await deps.save(view);
  // Command counts follow each finished command (not only turn ends), so job
  // lists stay live during a long turn; bursts cost one ledger read per 250 ms.
  let countsTimer: NodeJS.Timeout | null = null;
  const countsSoon = () => {
    countsTimer ??= setTimeout(() => {
      countsTimer = null;
      refreshCounts(pipeline, view).then(() => deps.save(view))
        .catch((err) => process.stderr.write(`thinkflow job ${view.job_id}: updating command counts: ${(err as Error).message}\n`));
    }, 250);
  };
  const stopOnApproval = await pipeline.hub.subscribe(sid, (e) => {
    if (e.type === 'command_finished') return countsSoon();
    if (e.type === 'approval_requested' && view.status === 'running') view.status = 'awaiting_approval';
    else if (e.type === 'approval_resolved' && view.status === 'awaiting_approval') view.status = 'running';
    else return;
    void deps.save(view);
  });
  try {
    if (request.files && Object.keys(request.files).length > 0) {
      try {
        view.files_seeded = await pipeline.seedFiles(sid, request.files, signal);
      } catch (err) {
        if (signal.aborted) throw stoppedBy(signal, view);
        throw new JobStopped('failed', `seeding files failed: ${(err as Error).message}`);
      }
      await deps.save(view);
    }
    const history: AgentMessage[] = [{ role: 'system', text: flow.systemPrompt }, { role: 'user', kind: 'task', text: taskMessage(request) }];
    let issued = 0;
    for (let call = 1; call <= view.limits.max_turns; call++) {
      if (signal.aborted) throw stoppedBy(signal, view);
      const turn = await pipeline.nextTurn(sid);
      await events.append(sid, view.job_id, 'turn_started', { turn, api_call: call });
      const messages = toLlmMessages(history);
      const burntIds = (await pipeline.entries(sid)).filter((r) => r.turn > 0 && r.flow !== 'native' && BURNT.has(r.status)).map((r) => r.id);
      let report: TurnReport;
      try {
        report = await runTurn({ pipeline, events, endpoint: deps.endpoint, flow, sessionId: sid, jobId: view.job_id, turn, messages, commandBudget: view.limits.max_commands - issued, burntIds, signal });
      } catch (err) {
        if (signal.aborted) throw stoppedBy(signal, view);
        if (err instanceof ModelError) throw new JobStopped('failed', `model error: ${err.message}`);
        throw err;
      }
      issued += report.commandsIssued;
      view.turns += 1;
      view.api_calls += 1;
      addUsage(view, report);
      view.final_text = report.visibleText;
      if (signal.aborted) throw stoppedBy(signal, view);
      if (report.budgetExceeded) {
        await pipeline.failTurn(sid, turn, 'max_commands reached');
        throw new JobStopped('failed', `max_commands (${view.limits.max_commands}) exceeded`);
      }
      const outcome = decideTurnOutcome({ records: report.records, parseError: report.parseError, needResultId: report.needResultId, nativeCalls: report.toolCalls.length });
      await refreshCounts(pipeline, view);
      await events.append(sid, view.job_id, 'turn_ended', { turn, api_call: call, outcome: outcome.kind === 'interrupt' ? outcome.interruption.kind : outcome.kind });
      await deps.save(view);
      if (outcome.kind === 'done') {
        view.status = 'succeeded';
        return view;
      }
      history.push({ role: 'assistant', visibleText: report.visibleText, toolCalls: report.toolCalls, interrupted: outcome.kind === 'interrupt' });
      for (const r of report.nativeResults) history.push({ role: 'tool', toolCallId: r.call.id, text: nativeResultText(r) });
      // Native results reached the model as tool messages; everything else un-injected goes in one user message.
      const uninjected = await pipeline.uninjected(sid);
      const nativeIds = new Set(report.nativeResults.map((r) => r.call.id));
      const feedback = feedbackMessage(uninjected.filter((r) => !(r.flow === 'native' && nativeIds.has(r.id))), outcome.kind === 'interrupt' ? outcome.interruption : null);
      if (feedback) history.push({ role: 'user', kind: 'feedback', text: feedback });
      await pipeline.markInjected(sid, uninjected.map((r) => r.index));
    }
    throw new JobStopped('failed', `max_turns (${view.limits.max_turns}) reached before the model finished`);
  } catch (err) {
    const stopped = err instanceof JobStopped ? err : new JobStopped('failed', `infrastructure error: ${(err as Error).message}`);
    view.status = stopped.status;
    view.error = stopped.message;
    // Cancel and failures drain nothing further: queued commands of the open turn are skipped.
    await skipOpenTurn(pipeline, sid, `the job stopped: ${stopped.message}`).catch(() => {});
    return view;
  } finally {
    stopOnApproval();
    if (countsTimer) clearTimeout(countsTimer);
    view.finished_at = new Date().toISOString();
    await refreshCounts(pipeline, view).catch(() => {});
  }
}

function stoppedBy(signal: AbortSignal, view: JobView): JobStopped {
  if (signal.reason === 'cancelled') return new JobStopped('cancelled', 'cancelled by request');
  if (signal.reason === 'shutdown') return new JobStopped('failed', 'the service shut down before the job finished');
  return new JobStopped('failed', `timeout_s (${view.limits.timeout_s}) exceeded`);
}

/** Nothing of a stopped job runs later: queued commands are skipped, pending approvals rejected. */
async function skipOpenTurn(pipeline: Pipeline, sid: string, reason: string): Promise<void> {
  const open = (await pipeline.entries(sid)).filter((r) => r.status === 'queued' || r.status === 'awaiting_approval');
  for (const turn of new Set(open.map((r) => r.turn))) await pipeline.failTurn(sid, turn, 'job stopped');
  for (const a of await pipeline.approvals.listPending()) {
    if (a.session_id === sid) await pipeline.approvals.answer(a.token, 'reject', reason, 'thinkflow');
  }
}

/** A job's usage is estimated as soon as one of its calls was (API.md: `"estimated": true`). */
function addUsage(view: JobView, report: TurnReport): void {
  view.usage.prompt_tokens += report.usage.prompt_tokens;
  view.usage.completion_tokens += report.usage.completion_tokens;
  view.usage.total_tokens = view.usage.prompt_tokens + view.usage.completion_tokens;
  if (report.usage.estimated) view.usage.estimated = true;
}

async function refreshCounts(pipeline: Pipeline, view: JobView): Promise<void> {
  const counts = { total: 0, succeeded: 0, failed: 0, skipped: 0, forbidden: 0, rejected: 0 };
  for (const r of await pipeline.entries(view.session_id)) {
    if (r.flow === 'api') continue;
    counts.total++;
    if (r.status in counts) counts[r.status as keyof typeof counts]++;
    else if (r.status === 'interrupted') counts.failed++;
  }
  view.commands = counts;
}

/** A one-line summary per ledger record, for CLIs and the demo. */
export function ledgerSummary(records: readonly LedgerRecord[]): string[] {
  return records.map((r) => `${r.id.padStart(4)} ${r.tool.padEnd(6)} ${r.status.padEnd(10)} ${targetOf(r)}${r.error ? `  (${r.error})` : ''}`);
}

