// Test doubles for the turn loop: a scripted model stream and an in-memory
// pipeline that runs commands FIFO, one at a time, and reports
// command_finished like the real one (a failure skips the rest of its turn).
// No Redis, no HTTP.
import type { Command, CommandFlow } from '../../../services/protocol/index.ts';
import type { CommandHandle, LedgerRecord, LedgerStatus, RunnerEvent, SessionEvent } from '../../../services/pipeline/index.ts';
import type { JobPipeline } from '../../../services/agent/job-runner.ts';
import type { AgentMessage, ModelEvent, StreamFn, ToolSpec } from '../../../services/agent/messages.ts';

/** A model event, or a pause: an action run before the next event (wait for a result, abort the job). */
export type Step = ModelEvent | (() => unknown);

export interface ScriptedStream {
  stream: StreamFn;
  /** What each call received. */
  requests: Array<{ messages: readonly AgentMessage[]; tools: readonly ToolSpec[] }>;
  /** Whether the driver aborted the call (the SDK would then throw an abort error). */
  aborted: boolean[];
}

/** One script per model call; like the SDK, an aborted call throws on its next event. */
export function scripted(...calls: Step[][]): ScriptedStream {
  const s: ScriptedStream = { requests: [], aborted: [], stream: null as unknown as StreamFn };
  s.stream = (request, signal) => {
    const n = s.requests.push({ messages: [...request.messages], tools: request.tools }) - 1;
    s.aborted[n] = false;
    signal.addEventListener('abort', () => { s.aborted[n] = true; }, { once: true });
    const steps = calls[n] ?? [];
    return (async function* () {
      for (const step of steps) {
        if (typeof step === 'function') await step();
        if (signal.aborted) throw Object.assign(new Error('Request was aborted.'), { name: 'AbortError' });
        if (typeof step !== 'function') yield step;
      }
    })();
  };
  return s;
}

/** A text or reasoning delta cut into pieces of `size` characters (the parser must not care). */
export function chunks(type: 'text' | 'reasoning', text: string, size = 7): ModelEvent[] {
  const out: ModelEvent[] = [];
  for (let i = 0; i < text.length; i += size) out.push({ type, text: text.slice(i, i + size) });
  return out;
}

type Outcome = Partial<Pick<LedgerRecord, 'status' | 'error' | 'stdout' | 'exit_code'>>;

export class FakePipeline implements JobPipeline {
  readonly parserOptions = {};
  readonly records: LedgerRecord[] = [];
  readonly failTurnCalls: Array<{ turn: number; label: string }> = [];
  readonly drained: number[] = [];
  readonly #listeners = new Set<(e: SessionEvent) => void>();
  #chain: Promise<void> = Promise.resolve();
  #turn = 0;
  #seq = 0;
  #waiters: Array<() => void> = [];

  /** `results`: how a command ends (default: succeeded with no output). */
  constructor(private readonly results: (c: LedgerRecord) => Outcome = () => ({})) {}

  readonly hub = {
    subscribe: async (_sid: string, listener: (e: SessionEvent) => void) => {
      this.#listeners.add(listener);
      return () => { this.#listeners.delete(listener); };
    },
  };

  readonly approvals = {
    listPending: async () => [],
    answer: async () => { throw new Error('no approvals in the fake'); },
  } as unknown as JobPipeline['approvals'];

  async enqueue(sid: string, turn: number, command: Command, flow: CommandFlow): Promise<CommandHandle> {
    const index = this.records.length + 1;
    this.records.push(newRecord(sid, turn, index, command, flow));
    this.#chain = this.#chain.then(() => this.#execute(index));
    return { sessionId: sid, turn, id: command.id, index, status: 'queued' };
  }

  async #execute(index: number): Promise<void> {
    await new Promise((r) => setImmediate(r));
    const rec = this.records[index - 1]!;
    if (rec.status !== 'queued') return;
    this.#finish(rec, { status: 'succeeded', ...this.results(rec) });
    if (['failed', 'forbidden', 'rejected', 'interrupted'].includes(rec.status)) this.#skipRest(rec.turn);
  }

  #finish(rec: LedgerRecord, outcome: Outcome): void {
    Object.assign(rec, outcome, { finished_at: new Date().toISOString() });
    const event = { seq: ++this.#seq, index: rec.index, type: 'command_finished', session_id: rec.session, job_id: null, at: rec.finished_at!, record: rec } as const;
    for (const l of this.#listeners) l(event);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  #skipRest(turn: number): void {
    for (const r of this.records) if (r.turn === turn && r.status === 'queued') this.#finish(r, { status: 'skipped' });
  }

  async failTurn(_sid: string, turn: number, label: string): Promise<void> {
    this.failTurnCalls.push({ turn, label });
    this.#skipRest(turn);
  }

  /** Resolves once the command with this id is final. */
  async finished(id: string): Promise<LedgerRecord> {
    for (;;) {
      const rec = this.records.find((r) => r.id === id);
      if (rec && rec.status !== 'queued') return rec;
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }

  async awaitResult(handle: CommandHandle): Promise<LedgerRecord> {
    return this.finished(handle.id);
  }

  async drainTurn(_sid: string, turn: number): Promise<LedgerRecord[]> {
    this.drained.push(turn);
    const mine = () => this.records.filter((r) => r.turn === turn);
    for (const r of mine()) await this.finished(r.id);
    return mine();
  }

  async nextTurn(): Promise<number> { return ++this.#turn; }
  async entries(): Promise<LedgerRecord[]> { return [...this.records]; }
  async uninjected(): Promise<LedgerRecord[]> { return this.records.filter((r) => !r.injected); }
  async markInjected(_sid: string, indexes: number[]): Promise<void> {
    for (const i of indexes) this.records[i - 1]!.injected = true;
  }
  async seedFiles(_sid: string, files: Record<string, string>) {
    return Object.entries(files).map(([path, content]) => ({ path, bytes: Buffer.byteLength(content) }));
  }
}

function newRecord(session: string, turn: number, index: number, c: Command, flow: CommandFlow): LedgerRecord {
  const at = new Date().toISOString();
  return {
    session, turn, id: c.id, tool: c.tool, path: c.path ?? null, dest: c.dest ?? null, cmd: c.cmd ?? null,
    content: c.content ?? null, content_size: null, content_sha256: null, old_text: c.old_text ?? null, new_text: c.new_text ?? null,
    content_truncated: false, old_text_size: null, old_text_sha256: null, old_text_truncated: false, new_text_size: null, new_text_sha256: null, new_text_truncated: false,
    need_result: c.need_result, timeout: c.timeout ?? null, flow, risk: 'medium', decision: 'allow', matched_rule: null, matched_rules: [],
    justification: null, policy_reason: null, enqueued_at: at, timings: { admitted_at: at, queued_at: at },
    error: null, error_code: null, bytes_written: null, stdout: null, stderr: null, stdout_truncated: false, stderr_truncated: false,
    exit_code: null, duration_ms: null, output_summary: null,
    index, status: 'queued' as LedgerStatus, approval: null, injected: false, started_at: null, finished_at: null, executed_by: null,
  };
}

/** The sink a job would write to, kept in memory. */
export function collect(): { events: RunnerEvent[]; emit: (e: RunnerEvent) => Promise<void> } {
  const events: RunnerEvent[] = [];
  return { events, emit: async (e) => { events.push(e); } };
}
