import type { Redis } from 'ioredis';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import { targetOf, type LedgerRecord } from './ledger-record.ts';

// Events of a session. They are written by the Lua scripts together with the
// state change they describe (a Redis stream per session, entry id `seq-0`, so
// any API process can replay them from a `Last-Event-ID`), and published on a
// per-session channel for live waiters. `EventHub` fans one subscriber
// connection per process out to any number of listeners.

export const EVENT_TYPES = [
  'command_queued', 'approval_requested', 'approval_resolved', 'command_started', 'command_finished',
] as const;
export type PipelineEventType = (typeof EVENT_TYPES)[number];

export type PublicApproval = {
  token: string; session_id: string; job_id: string | null; command_id: string; turn: number;
  tool: string; target: string; matched_rules: LedgerRecord['matched_rules']; justification: string | null;
  created_at: string; expires_at: string;
  status?: string; decision?: string | null; decided_by?: string | null; reason?: string | null; decided_at?: string | null;
  /** What each scope of approve_for_session would grant (POLICY.md §7). */
  grant_options?: { scope: 'exact' | 'prefix'; covers: string | null; unavailable?: string }[];
  /** The scope an approve_for_session answer chose. */
  grant_scope?: 'exact' | 'prefix';
};

/** What command_queued/command_started carry: enough to show progress, without the body. */
export type CommandSummary = { turn: number; id: string; tool: string; status: string; flow: string; target: string };

export function summaryOf(r: LedgerRecord): CommandSummary {
  return { turn: r.turn, id: r.id, tool: r.tool, status: r.status, flow: r.flow, target: targetOf(r) };
}

export type PipelineEvent = {
  seq: number;
  /** ledger index of the command the event is about */
  index: number;
  type: PipelineEventType;
  session_id: string;
  job_id: string | null;
  at: string;
  /** command_finished: the full ledger record */
  record?: LedgerRecord;
  /** command_queued, command_started */
  command?: CommandSummary;
  approval?: PublicApproval;
};

/** The JSON a script receives: everything but seq/index, which the script prepends. */
export function eventJson(type: PipelineEventType, body: Omit<PipelineEvent, 'seq' | 'index' | 'type'>): string {
  return JSON.stringify({ type, ...body });
}

/** The arguments of the appendEvent script: an event that is not a ledger change. */
export function appendEventArgs(keys: Keys, sid: string, type: string, body: Record<string, unknown>, keep: number): (string | number)[] {
  return [keys.eventSeq(sid), keys.events(sid), keys.eventChannel(sid), type, JSON.stringify({ type, ...body }), keep];
}

/** Appends an event that is not a ledger change (files_seeded, the job runner's events); returns its seq. */
export async function appendEvent(redis: PipelineRedis, keys: Keys, sid: string, type: string, body: Record<string, unknown>, keep: number): Promise<number> {
  return Number(await redis.appendEvent(...appendEventArgs(keys, sid, type, body, keep)));
}

/** The seq of the oldest event still kept, or null when the session has none. */
export async function firstKeptSeq(redis: Redis, keys: Keys, sid: string): Promise<number | null> {
  const [first] = await redis.xrange(keys.events(sid), '-', '+', 'COUNT', 1);
  return first ? Number(first[0].split('-')[0]) : null;
}

/** Events after `afterSeq` (0 = from the first), oldest first. */
export async function readEvents(redis: Redis, keys: Keys, sid: string, afterSeq = 0, count = 1000): Promise<PipelineEvent[]> {
  const rows = await redis.xrange(keys.events(sid), `(${afterSeq}-0`, '+', 'COUNT', count);
  return rows.map(([, fields]) => JSON.parse(fields[fields.indexOf('d') + 1]!) as PipelineEvent);
}

type Listener = (event: PipelineEvent) => void;

/** One subscriber connection per process (shared, not owned), fanned out to every waiter. */
export class EventHub {
  readonly #sub: Redis;
  readonly #keys: Keys;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #subscribing = new Map<string, Promise<unknown>>();
  constructor(subscriber: Redis, keys: Keys) {
    this.#sub = subscriber;
    this.#keys = keys;
    this.#sub.on('message', (channel: string, message: string) => {
      const set = this.#listeners.get(channel);
      if (!set) return;
      let event: PipelineEvent;
      try { event = JSON.parse(message) as PipelineEvent; } catch { return; }
      for (const l of set) {
        try { l(event); } catch { /* a listener must not break the others */ }
      }
    });
  }

  /** Resolves once Redis confirmed the subscription, so a state read after it misses nothing. */
  async subscribe(sid: string, listener: Listener): Promise<() => void> {
    const channel = this.#keys.eventChannel(sid);
    let set = this.#listeners.get(channel);
    if (!set) {
      set = new Set();
      this.#listeners.set(channel, set);
      this.#subscribing.set(channel, this.#sub.subscribe(channel));
    }
    set.add(listener);
    await this.#subscribing.get(channel);
    return () => {
      const s = this.#listeners.get(channel);
      if (!s) return;
      s.delete(listener);
      if (s.size === 0) {
        this.#listeners.delete(channel);
        this.#subscribing.delete(channel);
        this.#sub.unsubscribe(channel).catch(() => {});
      }
    };
  }

  /** Drops every listener; the subscriber connection belongs to the caller. */
  close(): void {
    for (const channel of this.#listeners.keys()) this.#sub.unsubscribe(channel).catch(() => {});
    this.#listeners.clear();
    this.#subscribing.clear();
  }
}
