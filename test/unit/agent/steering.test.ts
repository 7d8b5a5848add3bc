// Steering and pause in the job loop, against scripted model calls, the
// in-memory pipeline and an in-memory JobControl: where a message lands, what
// an interrupt stops, what a pause holds.
import { describe, expect, it } from 'vitest';
import { runJob } from '../../../services/agent/job-runner.ts';
import { emptyCounts, type JobState } from '../../../services/agent/job-state.ts';
import type { JobControl, SteeringMessage } from '../../../services/agent/steering.ts';
import { FakePipeline, collect, scripted, type Step } from './fakes.ts';

class MemoryControl implements JobControl {
  pending: SteeringMessage[] = [];
  paused = false;
  readonly #stops = new Set<() => void>();
  #resume: (() => void) | null = null;

  say(text: string, interrupt = false): void {
    this.pending.push({ id: `m${this.pending.length}`, text, interrupt, at: '2026-01-01T00:00:00.000Z' });
    if (interrupt) for (const stop of this.#stops) stop();
  }

  async untilRunnable(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.paused) await new Promise<void>((r) => { this.#resume = r; });
  }

  resume(): void {
    this.paused = false;
    this.#resume?.();
  }

  async takeMessages(): Promise<SteeringMessage[]> {
    return this.pending.splice(0);
  }

  async hasMessages(): Promise<boolean> {
    return this.pending.length > 0;
  }

  onInterrupt(stop: () => void): () => void {
    this.#stops.add(stop);
    return () => this.#stops.delete(stop);
  }
}

const job = (): JobState => ({
  job_id: 'job_1', session_id: 'ses_1', flow: 'thinkflow', limits: { max_turns: 4, max_commands: 50, timeout_s: 60, max_failed_turns_in_a_row: 3 }, status: 'queued', turns: 0, api_calls: 0,
  usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, commands: emptyCounts(), final_text: null, files_seeded: [], validation: null, error: null, started_at: null, finished_at: null,
} as JobState);

function start(control: MemoryControl, ...calls: Step[][]) {
  const pipeline = new FakePipeline();
  const model = scripted(...calls);
  const sink = collect();
  const done = runJob({ pipeline, stream: model.stream, emit: sink.emit, save: async () => {}, control }, job(), { task: 'do it' }, new AbortController().signal);
  return { done, pipeline, model, events: sink.events };
}

const lastUser = (messages: readonly { role: string }[]) => ([...messages].reverse().find((m) => m.role === 'user') as unknown as { text: string }).text;
const write = (id: string, path: string) => `<tf-write id="${id}" path="${path}">\nx\n</tf-write>\n`;

describe('steering', () => {
  it('an interrupt stops the stream; the turn\'s commands still run; the next call carries the message', async () => {
    const control = new MemoryControl();
    const { done, model, pipeline, events } = start(control,
      [{ type: 'reasoning', text: write('1', 'a.txt') }, { type: 'text', text: 'working' }, () => control.say('use b.txt instead', true), { type: 'text', text: ' TAIL' }],
      [{ type: 'reasoning', text: write('2', 'b.txt') }, { type: 'text', text: 'ok' }]);
    const view = await done;
    expect(view).toMatchObject({ status: 'succeeded', api_calls: 2 });
    expect(model.aborted[0]).toBe(true);
    expect(pipeline.records.map((r) => [r.id, r.status])).toEqual([['1', 'succeeded'], ['2', 'succeeded']]);
    const second = model.requests[1]!.messages;
    expect(second.find((m) => m.role === 'assistant')).toMatchObject({ visibleText: 'working' });
    expect(lastUser(second)).toMatch(/\[THINKFLOW COMMAND LEDGER\][\s\S]*id=1[\s\S]*\[THINKFLOW MESSAGE\]\nA person following this job says:\nuse b\.txt instead\n\[\/THINKFLOW MESSAGE\]$/);
    expect(events.filter((e) => e.type === 'turn_ended').map((e) => (e as { outcome: string }).outcome)).toEqual(['steered', 'done']);
  });

  it('a message sent before the first call joins the task message', async () => {
    const control = new MemoryControl();
    control.say('be brief');
    const { done, model } = start(control, [{ type: 'text', text: 'ok' }]);
    await done;
    expect(model.requests).toHaveLength(1);
    expect(lastUser(model.requests[0]!.messages)).toBe('do it\n\n[THINKFLOW MESSAGE]\nA person following this job says:\nbe brief\n[/THINKFLOW MESSAGE]');
  });

  it('a message that arrives while the model ends its last turn gets one more call', async () => {
    const control = new MemoryControl();
    const { done, model } = start(control, [{ type: 'text', text: 'done' }, () => control.say('one more thing')], [{ type: 'text', text: 'done too' }]);
    const view = await done;
    expect(view).toMatchObject({ status: 'succeeded', api_calls: 2, final_text: 'done too' });
    expect(lastUser(model.requests[1]!.messages)).toContain('one more thing');
  });

  it('a pause holds the next model call until resume', async () => {
    const control = new MemoryControl();
    control.paused = true;
    const { done, model } = start(control, [{ type: 'text', text: 'ok' }]);
    await new Promise((r) => setTimeout(r, 50));
    expect(model.requests).toHaveLength(0);
    control.resume();
    expect(await done).toMatchObject({ status: 'succeeded', api_calls: 1 });
  });
});
