// Steering and pause/resume of a running job (API.md additions) across
// processes: the API process that receives a message or a pause writes it to
// Redis; the process running the job polls it (like cancel) and applies it
// through the agent's `JobControl` port. Messages wait in one list per job
// (one key: its scripts, pipeline/scripts/jobMessage*.lua, never cross Redis
// Cluster slots); the pause flag is a field of the job's hash, beside `cancel`.
import { randomBytes } from 'node:crypto';
import type { JobControl, SteeringMessage } from '../agent/index.ts';
import { ScriptCode, codeOf, type Keys, type PipelineRedis } from '../pipeline/index.ts';

/** A message's text, in characters (the JSON body limit bounds it too). */
export const MAX_MESSAGE_CHARS = 64 * 1024;
/** Messages a job holds before its next model call takes them. */
export const MAX_PENDING_MESSAGES = 32;

export class JobControlStore {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  /** Pending messages outlive a job by this much at most (THINKFLOW_RETENTION_S). */
  readonly #ttlS: number;

  constructor(redis: PipelineRedis, keys: Keys, retentionS: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.#ttlS = retentionS;
  }

  /** The stored message, or null when the job already holds MAX_PENDING_MESSAGES. */
  async addMessage(jobId: string, text: string, interrupt: boolean): Promise<SteeringMessage | null> {
    const message: SteeringMessage = { id: `msg_${randomBytes(8).toString('hex')}`, text, interrupt, at: new Date().toISOString() };
    const n = await this.#redis.jobMessagePush(this.#keys.jobMessages(jobId), JSON.stringify(message), MAX_PENDING_MESSAGES, this.#ttlS);
    return codeOf(n) === ScriptCode.FULL ? null : message;
  }

  async pending(jobId: string): Promise<SteeringMessage[]> {
    return parseAll(await this.#redis.lrange(this.#keys.jobMessages(jobId), 0, -1));
  }

  async take(jobId: string): Promise<SteeringMessage[]> {
    return parseAll((await this.#redis.jobMessagesTake(this.#keys.jobMessages(jobId))) as string[]);
  }

  async setPaused(jobId: string, paused: boolean): Promise<void> {
    await this.#redis.hset(this.#keys.job(jobId), 'pause', paused ? '1' : '0');
  }

  async pauseRequested(jobId: string): Promise<boolean> {
    return (await this.#redis.hget(this.#keys.job(jobId), 'pause')) === '1';
  }
}

function parseAll(raw: readonly string[]): SteeringMessage[] {
  return raw.map((m) => JSON.parse(m) as SteeringMessage);
}

/** What a pause or resume changes besides the flag: the job's status and its event. */
export type PauseChange = (paused: boolean) => Promise<void>;

/** One running job's side of the port: polled state, waiters on a pause, the current stream's stop. */
export class LiveJobControl implements JobControl {
  readonly #store: JobControlStore;
  readonly #jobId: string;
  readonly #onChange: PauseChange;
  #paused = false;
  #resumed: { promise: Promise<void>; resolve: () => void } | null = null;
  readonly #stops = new Set<() => void>();
  /** Interrupts already acted on (or taken by a model call): each stops at most one stream. */
  readonly #seen = new Set<string>();

  constructor(store: JobControlStore, jobId: string, onChange: PauseChange) {
    this.#store = store;
    this.#jobId = jobId;
    this.#onChange = onChange;
  }

  get paused(): boolean {
    return this.#paused;
  }

  async untilRunnable(signal: AbortSignal): Promise<void> {
    while (this.#paused) {
      signal.throwIfAborted();
      const resumed = this.#resumed!.promise;
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        void resumed.then(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    }
  }

  async takeMessages(): Promise<SteeringMessage[]> {
    const taken = await this.#store.take(this.#jobId);
    for (const m of taken) this.#seen.add(m.id);
    return taken;
  }

  async hasMessages(): Promise<boolean> {
    return (await this.#store.pending(this.#jobId)).length > 0;
  }

  onInterrupt(stop: () => void): () => void {
    this.#stops.add(stop);
    return () => this.#stops.delete(stop);
  }

  /** One poll: applies a pause or resume requested from any process, and stops the stream on a new interrupt. */
  async poll(): Promise<void> {
    const [pause, pending] = await Promise.all([this.#store.pauseRequested(this.#jobId), this.#store.pending(this.#jobId)]);
    const fresh = pending.filter((m) => m.interrupt && !this.#seen.has(m.id));
    for (const m of fresh) this.#seen.add(m.id);
    if (fresh.length > 0) for (const stop of this.#stops) stop();
    if (pause !== this.#paused) await this.#set(pause);
  }

  async #set(paused: boolean): Promise<void> {
    this.#paused = paused;
    if (paused) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#resumed = { promise, resolve };
    } else {
      this.#resumed?.resolve();
      this.#resumed = null;
    }
    await this.#onChange(paused);
  }
}
