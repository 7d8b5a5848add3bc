// One model call of a job: stream it, feed both parsers, enqueue every
// completed command the moment it completes, stop the stream on a failure, a
// parse error or a need_result, then settle the turn (PROTOCOL.md §5).
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { CommandFlow, ParseError } from '../protocol/command.ts';
import { TurnParser, type ParserOutput } from '../protocol/index.ts';
import type { LedgerRecord } from '../pipeline/ledger-record.ts';
import type { CommandHandle, Pipeline } from '../pipeline/pipeline.ts';
import type { JobEvents } from '../jobs/job-events.ts';
import type { Flow } from './flows.ts';
import type { NativeToolCall } from './messages.ts';
import { streamChat, type ModelEndpoint } from './model-client.ts';
import { commandFromToolCall, nativeTools } from './native-tools.ts';
import { DeltaEvents } from './delta-events.ts';
import { FAILURE_STATUSES } from './turn-outcome.ts';
import { estimateUsage, type Usage } from './usage.ts';

export interface TurnInput {
  pipeline: Pipeline;
  events: JobEvents;
  endpoint: ModelEndpoint;
  flow: Flow;
  sessionId: string;
  jobId: string;
  /** The pipeline's turn number (ledger `turn`). */
  turn: number;
  messages: ChatCompletionMessageParam[];
  /** Commands the job may still issue (max_commands). */
  commandBudget: number;
  /** Ids of earlier failed or skipped commands: reusing one is a duplicate_id. */
  burntIds: readonly string[];
  /** Aborted on cancel or job timeout. */
  signal: AbortSignal;
}

/** The model endpoint failed (connection, HTTP error, broken stream): the job fails with this reason. */
export class ModelError extends Error {
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'ModelError';
  }
}

export interface NativeResult {
  call: NativeToolCall;
  record: LedgerRecord | null;
  error: string | null;
}

export interface TurnReport {
  visibleText: string;
  outputText: string;
  /** The reasoning stream as received (tags included): the model produced it, so it is billed. */
  reasoningText: string;
  toolCalls: NativeToolCall[];
  /** The provider's figures, or an estimate (estimated: true) when it sent none. */
  usage: Usage & { estimated: boolean };
  /** Records of tag commands, final, in ledger order. */
  records: LedgerRecord[];
  nativeResults: NativeResult[];
  parseError: { stream: string; error: ParseError; commandsBefore: number } | null;
  needResultId: string | null;
  commandsIssued: number;
  budgetExceeded: boolean;
}

export async function runTurn(input: TurnInput): Promise<TurnReport> {
  const { pipeline, events, sessionId: sid, jobId, turn, flow } = input;
  const parser = new TurnParser({ ...pipeline.parserOptions, usedIds: input.burntIds });
  const out = new DeltaEvents(events, sid, jobId, turn);
  const stop = new AbortController();
  const onJobAbort = () => stop.abort(input.signal.reason);
  input.signal.addEventListener('abort', onJobAbort, { once: true });
  const handles: Promise<CommandHandle>[] = [];
  const report: TurnReport = {
    visibleText: '', outputText: '', reasoningText: '', toolCalls: [], usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, estimated: false }, records: [], nativeResults: [],
    parseError: null, needResultId: null, commandsIssued: 0, budgetExceeded: false,
  };
  let needResult: Promise<CommandHandle> | null = null;
  // A failure of this turn's command stops the stream as soon as the worker reports it.
  const unsubscribe = await pipeline.hub.subscribe(sid, (e) => {
    if (e.type === 'command_finished' && e.record && e.record.turn === turn && FAILURE_STATUSES.has(e.record.status)) stop.abort('command failed');
  });

  // Errors of the pipeline or Redis here are infrastructure errors, not the model's: tag them apart.
  const handle = (outputs: readonly ParserOutput[]) => dispatch(outputs).catch((err) => { throw new PipelineTrouble(err); });
  const dispatch = async (outputs: readonly ParserOutput[]) => {
    for (const o of outputs) {
      if (stop.signal.aborted) return;
      if (o.type === 'error') {
        report.parseError = { stream: o.stream, error: o.error, commandsBefore: handles.length };
        await out.event('parse_error', { turn, stream: o.stream, error: o.error });
        await Promise.allSettled(handles);
        await pipeline.failTurn(sid, turn, `parse error (${o.error.code}${o.error.id ? ` in tag ${o.error.id}` : ''})`);
        stop.abort('parse error');
        return;
      }
      if (report.commandsIssued >= input.commandBudget) {
        report.budgetExceeded = true;
        stop.abort('max_commands');
        return;
      }
      report.commandsIssued++;
      await out.event('command_parsed', { turn, stream: o.stream, command: o.command });
      const h = pipeline.enqueue(sid, turn, o.command, o.stream as CommandFlow);
      handles.push(h);
      if (o.command.need_result) {
        report.needResultId = o.command.id;
        needResult = h;
        stop.abort('need_result');
        return;
      }
    }
  };

  const calls = new Map<number, NativeToolCall>();
  let completed = false;
  let providerUsage: Usage | null = null;
  const tools = nativeTools(flow.nativeTools);
  try {
    for await (const ev of streamChat(input.endpoint, input.messages, tools, stop.signal)) {
      if (ev.type === 'reasoning') {
        report.reasoningText += ev.text;
        await out.delta('reasoning_delta', ev.text);
        if (flow.parsesTags) await handle(parser.feed('reasoning', ev.text));
      } else if (ev.type === 'text') {
        report.outputText += ev.text;
        let visible = ev.text;
        if (flow.parsesTags) {
          const outputs = parser.feed('text', ev.text);
          visible = parser.takeVisible();
          await out.delta('text_delta', visible);
          await handle(outputs);
        } else await out.delta('text_delta', visible);
      } else if (ev.type === 'tool_call') {
        const call = calls.get(ev.index) ?? { id: '', name: '', arguments: '' };
        if (ev.id) call.id = ev.id;
        if (ev.name) call.name += ev.name;
        if (ev.arguments) call.arguments += ev.arguments;
        calls.set(ev.index, call);
      } else if (ev.type === 'usage') {
        providerUsage = { prompt_tokens: ev.prompt_tokens, completion_tokens: ev.completion_tokens, total_tokens: ev.total_tokens };
      }
      if (stop.signal.aborted) break;
    }
    completed = !stop.signal.aborted;
  } catch (err) {
    if (err instanceof PipelineTrouble) throw err.cause;
    // Our own abort (failure, need_result, cancel) ends the stream; anything else is the model's.
    if (!stop.signal.aborted) throw new ModelError(err);
  } finally {
    input.signal.removeEventListener('abort', onJobAbort);
    report.usage = providerUsage
      ? { ...providerUsage, estimated: false }
      : { ...estimateUsage(input.messages, tools, { reasoning: report.reasoningText, text: report.outputText, toolCalls: [...calls.values()] }), estimated: true };
  }
  try {
    // Only a stream that ended by itself can leave tags open (unclosed_tag).
    if (completed && flow.parsesTags) await handle(parser.end());
    await out.flush();
    report.visibleText = flow.parsesTags ? parser.visibleText() : report.outputText;
    // A command the pipeline refused to take (session deleted, Redis down) must not pass for done.
    const refused = (await Promise.allSettled(handles)).find((r) => r.status === 'rejected');
    if (refused) throw (refused as PromiseRejectedResult).reason;
    if (input.signal.aborted) return report;
    if (needResult) await pipeline.awaitResult(await needResult, input.signal);
    report.records = await pipeline.drainTurn(sid, turn, input.signal);
    report.toolCalls = completed ? [...calls.values()].filter((c) => c.name) : [];
    for (const [i, call] of report.toolCalls.entries()) {
      if (!call.id) call.id = `call_${turn}_${i}`;
      report.nativeResults.push(await runNative(input, call));
    }
  } finally {
    unsubscribe();
  }
  return report;
}

class PipelineTrouble extends Error {
  constructor(override readonly cause: unknown) {
    super('pipeline error while dispatching');
  }
}

async function runNative(input: TurnInput, call: NativeToolCall): Promise<NativeResult> {
  const parsed = commandFromToolCall(call.id, call.name, call.arguments, input.flow.nativeTools);
  if (!parsed.ok) return { call, record: null, error: parsed.error };
  await input.events.append(input.sessionId, input.jobId, 'command_parsed', { turn: input.turn, stream: 'native', command: parsed.command });
  try {
    const h = await input.pipeline.enqueue(input.sessionId, input.turn, parsed.command, 'native');
    return { call, record: await input.pipeline.awaitResult(h, input.signal), error: null };
  } catch (err) {
    return { call, record: null, error: (err as Error).message };
  }
}
