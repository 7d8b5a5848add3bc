import type { EventBody, LedgerEventType, PublicApproval, RunnerEvent } from './events.ts';
import { summaryOf } from './events.ts';
import type { Keys } from './keys.ts';
import type { LedgerRecord } from './ledger-record.ts';
import { boundCommand } from './record-body.ts';
import type { PipelineRedis } from './redis.ts';

// The one writer of a session's event stream. The Lua scripts stay the atomic
// step (an event is stored with the state change it describes, numbered from
// one counter per session, and published); this module builds every event's
// JSON and the scripts' event arguments, so the stored shape has one author.
// A script prepends `seq` and `index` to the JSON it is given.

/**
 * Where a job runner's events go: its session and job are fixed, it says only
 * what happened. A rejection (the store is down) fails the job as an infrastructure error.
 */
export type JobEmit = (event: RunnerEvent) => Promise<unknown>;

/** The JSON a script receives: the event without seq/index, fields in wire order. */
function bodyJson(sid: string, jobId: string | null, at: string, body: EventBody): string {
  const { type, ...fields } = body;
  return JSON.stringify({ type, session_id: sid, job_id: jobId, at, ...fields });
}

/**
 * The (type, JSON) argument pair of a ledger event for the createRecord and
 * transition scripts. `record` is the record as it reads after the change;
 * createRecord's carries the placeholder `index: -1` as its first key, which
 * the script replaces with the index it allocates.
 */
export function ledgerEventArgs(
  type: LedgerEventType,
  e: { sid: string; jobId: string | null; at: string; record: LedgerRecord; approval?: PublicApproval | undefined },
): [string, string] {
  const payload = type === 'approval_requested' || type === 'approval_resolved'
    ? { approval: e.approval }
    : type === 'command_finished' ? { record: e.record } : { command: summaryOf(e.record) };
  return [type, bodyJson(e.sid, e.jobId, e.at, { type, ...payload } as EventBody)];
}

export class EventWriter {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  /** events kept per session stream; 0 = all (THINKFLOW_EVENTS_KEEP) */
  readonly #keep: number;
  /** THINKFLOW_RECORD_BODY_BYTES: bodies a command_parsed event keeps */
  readonly #bodyBytes: number;

  constructor(redis: PipelineRedis, keys: Keys, keep: number, bodyBytes: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.#keep = keep;
    this.#bodyBytes = bodyBytes;
  }

  /** Appends an event that is not a ledger change (files_seeded, the job runner's); returns its seq. */
  async append(sid: string, jobId: string | null, body: EventBody): Promise<number> {
    return Number(await this.#redis.appendEvent(...this.#args(sid, jobId, body)));
  }

  /** A writer bound to one job's session, for the job runner. */
  emitter(sid: string, jobId: string): JobEmit {
    return (event) => this.append(sid, jobId, event);
  }

  /** appendEvent-5: KEYS seq counter, stream, channel, session meta, session bytes; ARGV type, JSON, events kept. */
  #args(sid: string, jobId: string | null, body: EventBody): (string | number)[] {
    const k = this.#keys;
    const bounded = body.type === 'command_parsed' ? { ...body, command: boundCommand(body.command, this.#bodyBytes) } : body;
    const json = bodyJson(sid, jobId, new Date().toISOString(), bounded);
    return [k.eventSeq(sid), k.events(sid), k.eventChannel(sid), k.sessionMeta(sid), k.sessionBytes(sid), body.type, json, this.#keep];
  }
}
