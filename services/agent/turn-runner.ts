// One model call of a job, the thin driver around the dispatcher: stream the
// call, feed the deltas to both parsers, hand every parser output and every
// failure the pipeline reports to the dispatcher, carry out its decision
// (enqueue, fail the turn, stop the stream), then settle the turn
// (PROTOCOL.md §5). The model stream, the pipeline and the event sink are
// injected, so the whole turn runs in tests against scripted streams.
import { precedingText, TurnParser, type ParserOutput } from '../protocol/index.ts';
import type { CommandHandle, FinishWatch, JobEmit, Pipeline } from '../pipeline/index.ts';
import { reasonOf, withIds } from '../log/index.ts';
import { DeltaEvents } from './delta-events.ts';
import { openTurnWatches } from './turn-watches.ts';
import { dispatch, startDispatch, type DispatchInput, type DispatchState, type DispatchVerdict } from './dispatcher.ts';
import type { Flow } from './flows.ts';
import type { AgentMessage, ModelEvent, NativeToolCall, StreamFn, ToolSpec } from './messages.ts';
import { commandFromToolCall, nativeTools } from './native-tools.ts';
import { StartedCall } from './started-call.ts';
import type { JobControl } from './steering.ts';
import { estimateUsage, type Usage } from './usage.ts';
import { ModelError, type NativeResult, type TurnReport } from './turn-report.ts';

export { ModelError, type NativeResult, type TurnReport, type TurnStop } from './turn-report.ts';

/** The part of the pipeline a turn uses. */
export type TurnPipeline = Pick<Pipeline, 'parserOptions' | 'enqueue' | 'failTurn' | 'awaitResult' | 'drainTurn'> & Partial<Pick<Pipeline, 'maxCommandsPerTurn' | 'watchFinished' | 'prewake'>> & { hub: Pick<Pipeline['hub'], 'subscribe'> };

export interface TurnDeps {
  pipeline: TurnPipeline;
  stream: StreamFn;
  emit: JobEmit;
}

export interface TurnInput {
  flow: Flow;
  sessionId: string;
  /** For log lines only. */
  jobId: string | null;
  /** The pipeline's turn number (ledger `turn`). */
  turn: number;
  messages: readonly AgentMessage[];
  /** Commands the job may still issue (max_commands). */
  commandBudget: number;
  /** Ids of earlier failed or skipped commands: reusing one is a duplicate_id. */
  burntIds: readonly string[];
  /** Aborted on cancel or job timeout. */
  signal: AbortSignal;
  /** Steering: an interrupt message stops this call's stream (the turn's queued commands still run). */
  control?: Pick<JobControl, 'onInterrupt'> | undefined;
  /** The call, sent while the turn was opened (`startCall`, with these messages and this flow); made here when absent. */
  call?: StartedCall | undefined;
}

/** Sends the model call of a turn not yet open (started-call.ts); the turn reads it through `TurnInput.call`. */
export function startCall(stream: StreamFn, flow: Flow, messages: readonly AgentMessage[], signal: AbortSignal): StartedCall {
  return new StartedCall(stream, { messages, tools: nativeTools(flow.nativeTools) }, signal);
}

export async function runTurn(deps: TurnDeps, input: TurnInput): Promise<TurnReport> {
  return new TurnRun(deps, input).run();
}

class TurnRun {
  #state: DispatchState;
  readonly #call: StartedCall;
  readonly #stop: AbortController;
  readonly #handles: Promise<CommandHandle>[] = [];
  #watch: FinishWatch | undefined;
  #needResult: Promise<CommandHandle> | null = null;
  readonly #parser: TurnParser;
  readonly #out: DeltaEvents;
  readonly #tools: ToolSpec[];
  readonly #calls = new Map<number, NativeToolCall>();
  #providerUsage: Usage | null = null;
  /** Set when the model's stream broke off mid-turn (the reason). */
  #broken: string | null = null;
  #received = false;
  readonly #report: TurnReport = {
    visibleText: '', outputText: '', reasoningText: '', toolCalls: [], usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, estimated: false },
    records: [], nativeResults: [], stop: { kind: 'completed' }, commandsIssued: 0,
  };

  constructor(private readonly deps: TurnDeps, private readonly input: TurnInput) {
    this.#state = startDispatch(input.turn, input.commandBudget, deps.pipeline.maxCommandsPerTurn);
    this.#parser = new TurnParser({ ...deps.pipeline.parserOptions, usedIds: input.burntIds, keepPreceding: true });
    this.#out = new DeltaEvents(deps.emit, input.turn);
    this.#tools = nativeTools(input.flow.nativeTools);
    this.#call = input.call ?? new StartedCall(deps.stream, { messages: input.messages, tools: this.#tools }, input.signal);
    this.#stop = this.#call.stop;
  }

  async run(): Promise<TurnReport> {
    const { pipeline } = this.deps;
    const { signal, sessionId } = this.input;
    pipeline.prewake?.(sessionId); // a paused container thaws while the model thinks, not when its first command comes
    // A failure of this turn's command stops the stream as soon as the worker reports it.
    const { unsubscribe, watch } = await openTurnWatches(pipeline, sessionId, (e) => {
      if (e.type === 'command_finished' && e.record) this.#halt({ type: 'command_finished', turn: e.record.turn, commandId: e.record.id, status: e.record.status });
    }).catch(async (err: unknown) => {
      await this.#call.drop(err); // sent already (started-call.ts): nobody will read it
      throw err;
    });
    this.#watch = watch;
    const onAbort = () => this.#halt({ type: 'aborted', reason: signal.reason });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    try {
      // Only the stream is interrupted: a message arriving while the turn drains waits for the next call.
      const unsteer = this.input.control?.onInterrupt(() => this.#halt({ type: 'steered' }));
      const completed = await this.#stream().finally(() => unsteer?.());
      this.#report.usage = this.#usage();
      await this.#settle(completed);
    } finally {
      signal.removeEventListener('abort', onAbort);
      unsubscribe();
      this.#watch?.close();
    }
    this.#report.commandsIssued = this.#state.issued;
    return this.#report;
  }

  #log(commandId?: string) {
    return withIds({ job_id: this.input.jobId, session_id: this.input.sessionId, command_id: commandId });
  }

  #decide(input: DispatchInput): DispatchVerdict {
    const { state, decision } = dispatch(this.#state, input);
    this.#state = state;
    return decision;
  }

  /** Inputs from outside the stream (a failure, an abort) can only stop it. */
  #halt(input: DispatchInput): void {
    const decision = this.#decide(input);
    if (decision.kind === 'stop') this.#stop.abort(decision.reason);
  }

  async #apply(d: DispatchVerdict, parsedAt?: Date): Promise<void> {
    const { pipeline } = this.deps;
    const { sessionId: sid, turn } = this.input;
    switch (d.kind) {
      case 'ignore':
        return;
      case 'stop':
        this.#stop.abort(d.reason);
        return;
      case 'fail_turn':
        await this.#out.event({ type: 'parse_error', turn, stream: d.reason.stream, error: d.reason.error });
        await Promise.allSettled(this.#handles);
        await pipeline.failTurn(sid, turn, d.label);
        this.#stop.abort(d.reason);
        return;
      case 'enqueue': {
        await this.#out.event({ type: 'command_parsed', turn, stream: d.stream, command: d.command });
        const handle = pipeline.enqueue(sid, turn, d.command, d.stream, parsedAt, this.#parser.precedingText(d.command.id));
        this.#handles.push(handle);
        if (d.stop) {
          this.#needResult = handle;
          this.#stop.abort(d.stop);
        }
      }
    }
  }

  async #feed(outputs: readonly ParserOutput[]): Promise<void> {
    const parsedAt = new Date(); // the records' parsed_at: the feed that produced these (their closing tags) returned just now
    for (const output of outputs) await this.#apply(this.#decide({ type: 'parsed', output }), parsedAt);
  }

  /** Streams the call; true when it ended by itself, false when the dispatcher or an abort stopped it. */
  async #stream(): Promise<boolean> {
    const it = this.#call;
    let open = true;
    try {
      for (;;) {
        // Stopped before a read (a cancel while the turn opened): whatever the call holds already is not read.
        if (this.#stop.signal.aborted) return false;
        let next: IteratorResult<ModelEvent>;
        try {
          next = await it.next();
        } catch (err) {
          open = false;
          if (!this.#stop.signal.aborted) {
            // Nothing arrived yet: the call itself failed (after the SDK's own retries).
            if (!this.#received) throw new ModelError(err);
            this.#broken = reasonOf(err);
            this.#log().warn({ err }, 'model stream broke off mid-turn; the commands parsed before the cut still run');
            return false;
          }
          // Our own stop (failure, need_result, cancel) ends the stream with the SDK's abort error: expected.
          this.#log().debug({ reason: reasonOf(err), stop: this.#state.stopped?.kind }, 'model stream stopped');
          return false;
        }
        if (next.done) {
          open = false;
          return !this.#stop.signal.aborted;
        }
        this.#received = true;
        await this.#onModelEvent(next.value);
        if (this.#stop.signal.aborted) return false;
      }
    } finally {
      if (open) await it.return();
      else it.detach();
    }
  }

  async #onModelEvent(ev: ModelEvent): Promise<void> {
    const report = this.#report;
    const parses = this.input.flow.parsesTags;
    switch (ev.type) {
      case 'reasoning':
        report.reasoningText += ev.text;
        await this.#out.delta('reasoning_delta', ev.text);
        if (parses) await this.#feed(this.#parser.feed('reasoning', ev.text));
        return;
      case 'text': {
        report.outputText += ev.text;
        if (!parses) return this.#out.delta('text_delta', ev.text);
        const outputs = this.#parser.feed('text', ev.text);
        await this.#out.delta('text_delta', this.#parser.takeVisible());
        return this.#feed(outputs);
      }
      case 'tool_call': {
        const call = this.#calls.get(ev.index) ?? { id: '', name: '', arguments: '' };
        if (ev.id) call.id = ev.id;
        if (ev.name) call.name += ev.name;
        if (ev.arguments) call.arguments += ev.arguments;
        this.#calls.set(ev.index, call);
        return;
      }
      case 'usage':
        this.#providerUsage = { prompt_tokens: ev.prompt_tokens, completion_tokens: ev.completion_tokens, total_tokens: ev.total_tokens };
    }
  }

  #usage(): Usage & { estimated: boolean } {
    if (this.#providerUsage) return { ...this.#providerUsage, estimated: false };
    const produced = { reasoning: this.#report.reasoningText, text: this.#report.outputText, toolCalls: [...this.#calls.values()] };
    return { ...estimateUsage(this.input.messages, this.#tools, produced), estimated: true };
  }

  /** After the stream: close the parsers, wait for the turn's commands (§5.5), run native tool calls. */
  async #settle(completed: boolean): Promise<void> {
    const { pipeline } = this.deps;
    const { sessionId: sid, turn, signal, flow } = this.input;
    const report = this.#report;
    // Only a stream that ended by itself can leave tags open (unclosed_tag).
    if (completed && flow.parsesTags) await this.#feed(this.#parser.end());
    // How the stream ended; a failure reported after this point is read from the records.
    report.stop = this.#state.stopped ?? (this.#broken !== null ? { kind: 'stream_broken', error: this.#broken } : { kind: 'completed' });
    await this.#out.flush();
    report.visibleText = flow.parsesTags ? this.#parser.visibleText() : report.outputText;
    // A command the pipeline refused to take (session deleted, Redis down) must not pass for done.
    const settled = await Promise.allSettled(this.#handles);
    const refused = settled.find((r) => r.status === 'rejected');
    if (refused) throw (refused as PromiseRejectedResult).reason;
    if (signal.aborted) return;
    if (this.#needResult) await pipeline.awaitResult(await this.#needResult, signal);
    // Every record of the turn is one this run enqueued: their indexes are known, the turn's list is not read.
    const indexes = settled.map((r) => (r as PromiseFulfilledResult<CommandHandle>).value.index);
    report.records = await pipeline.drainTurn(sid, turn, signal, this.#watch, indexes);
    report.toolCalls = completed ? [...this.#calls.values()].filter((c) => c.name) : [];
    for (const [i, call] of report.toolCalls.entries()) {
      if (!call.id) call.id = `call_${turn}_${i}`;
      report.nativeResults.push(await this.#runNative(call));
    }
  }

  async #runNative(call: NativeToolCall): Promise<NativeResult> {
    const { pipeline } = this.deps;
    const { sessionId: sid, turn, signal, flow } = this.input;
    const [parsed, parsedAt] = [commandFromToolCall(call.id, call.name, call.arguments, flow.nativeTools), new Date()];
    if (!parsed.ok) {
      this.#log(call.id).debug({ reason: parsed.error, tool: call.name }, 'native tool call refused; the model is told why');
      return { call, record: null, error: parsed.error };
    }
    await this.#out.event({ type: 'command_parsed', turn, stream: 'native', command: parsed.command });
    try {
      const handle = await pipeline.enqueue(sid, turn, parsed.command, 'native', parsedAt, precedingText(this.#report.reasoningText, this.#report.visibleText));
      return { call, record: await pipeline.awaitResult(handle, signal), error: null };
    } catch (err) {
      // The model hears why in the tool result and decides; the job goes on.
      this.#log(call.id).warn({ err }, 'native tool call could not run');
      return { call, record: null, error: reasonOf(err) };
    }
  }
}
