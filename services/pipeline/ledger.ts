import type { Grant, NetworkGrant } from '../policy/index.ts';
import type { Command, CommandFlow } from '../protocol/index.ts';
import { BusyIndex } from './busy-index.ts';
import { ledgerEventArgs } from './event-writer.ts';
import type { LedgerEventType, PublicApproval } from './events.ts';
import type { Keys } from './keys.ts';
import type { CreatedStatus } from './lifecycle/table.ts';
import {
  EMPTY_RESULT, FAILURE_STATUSES, FINAL_STATUSES, assembleRecord, blankRecord, timingsOf, buildBase, recordFromHash,
  type EvaluationData, type LedgerApproval, type LedgerRecord, type LedgerResult, type LedgerStatus,
} from './ledger-record.ts';
import type { PipelineRedis } from './redis.ts';
import { ScriptCode } from './script-codes.ts';
import { executionLoad, handoverOf, parseGrants, type ExecutionLoad, type RunHandover, type StoredGrant } from './execution-load.ts';
import { boundPreceding } from './approval-context.ts';

// The Redis ledger of PROTOCOL.md §6. One hash per record (`status`, `base`,
// `cmd`, `result`, `approval`, times, `injected`), ordered by a per-session
// counter. Every status change goes through the `transition` script: a
// compare-and-set on `status` plus the event, in one atomic step. This is the
// storage step only: which change is legal, and what follows it (metrics,
// skipping the turn), is CommandLifecycle's (command-lifecycle.ts).
/** What a queued record needs of a run job (createRecord): `start` one (an empty list), `wake` one lingering there, or nothing. */
export type RunAction = 'start' | 'wake' | null;

export type CreateOutcome =
  | { kind: 'created'; index: number; record: LedgerRecord; run: RunAction; handover?: RunHandover }
  | { kind: 'duplicate'; index: number }
  | { kind: 'turn_failed'; marker: string }
  | { kind: 'gone' } // the session is gone or deleted
  /** the job running on the session is not the one `jobGuard` named: `job`, its running_job now (null = none) */
  | { kind: 'stale_job'; job: string | null };

/** `record`: the record as the transition left it (callers go on with it instead of rebuilding it). */
export type TransitionOutcome = { ok: true; record: LedgerRecord } | { ok: false; current: string } | { ok: false; turnFailed: string } | { ok: false; notOwner: string };

export type TransitionSpec = {
  from: LedgerStatus[]; to: LedgerStatus;
  /** refuse (and report) when the turn already failed: used for queued → running; `runOwner`: unless another run marked the record */
  unlessTurnFailed?: boolean; runOwner?: string;
  events: LedgerEventType[];
  approval?: PublicApproval;
  fields?: { result?: LedgerResult; approval?: LedgerApproval; started_at?: string; finished_at?: string; injected?: boolean; executed_by?: string };
  dropCommand?: boolean; // drop the full command (large write bodies) once it can no longer run
};

export class Ledger {
  readonly #redis: PipelineRedis; readonly #keys: Keys;
  /** THINKFLOW_RECORD_BODY_BYTES: bodies kept per record */
  readonly #bodyBytes: number;
  /** events kept per session stream; 0 = all (THINKFLOW_EVENTS_KEEP) */
  readonly #eventsKeep: number;
  readonly #busy: BusyIndex;

  constructor(redis: PipelineRedis, keys: Keys, opts: { bodyBytes: number; eventsKeep?: number }) {
    this.#redis = redis;
    this.#keys = keys;
    this.#busy = new BusyIndex(redis, keys);
    this.#bodyBytes = opts.bodyBytes;
    this.#eventsKeep = opts.eventsKeep ?? 0;
  }

  async create(args: {
    session: string; turn: number; command: Command; flow: CommandFlow; evaluation: EvaluationData;
    status: CreatedStatus; /** the result of a record created final */ result?: LedgerResult; jobId?: string | null;
    /** when its tag was parsed, and when the policy decided (timings) */ parsedAt?: Date; admittedAt?: Date;
    /** what the model said before it (at most 2 KiB): kept only with a record that may ask an operator */ precedingText?: string;
    /** the running job the command was decided under (sessions.ts jobGuard): checked in the same write, with `deleted_at` */
    jobGuard: string;
  }): Promise<CreateOutcome> {
    const k = this.#keys;
    const sid = args.session;
    const now = new Date();
    const base = buildBase({ ...args, now, bodyBytes: this.#bodyBytes });
    const final = FINAL_STATUSES.has(args.status);
    const result = final ? args.result ?? EMPTY_RESULT : null;
    const finishedAt = final ? now.toISOString() : null;
    const baseJson = JSON.stringify(base);
    const resultJson = result ? JSON.stringify(result) : '';
    // The record as it will read right after this script; the script fills in the index.
    // Built from what this call writes: no schema parse and no JSON read back (it runs once per command).
    const record = assembleRecord(-1, base, result, {
      status: args.status, approval: null, injected: false, started_at: null, finished_at: finishedAt, executed_by: null,
    });
    const type: LedgerEventType = final ? 'command_finished' : 'command_queued';
    // Only a prompt can become an approval (lifecycle/admit.ts): nothing is stored for the rest.
    const preceding = args.status === 'queued' && args.evaluation.decision === 'prompt' ? boundPreceding(args.precedingText) : '';
    if (!final) await this.#busy.mark(sid);
    const res = (await this.#redis.createRecord(
      k.ledgerCounter(sid), k.ledgerIds(sid), k.open(sid), k.turnState(sid, args.turn), k.turnCommands(sid, args.turn),
      k.eventSeq(sid), k.events(sid), k.recordPrefix(sid), k.sessionMeta(sid), k.sessionBytes(sid), k.runList(sid), k.queueMeta(sid), k.grants(sid),
      `${args.turn}:${args.command.id}`, args.status, final ? '1' : '0',
      FAILURE_STATUSES.has(args.status) ? '1' : '0', args.status === 'skipped' ? '0' : '1',
      JSON.stringify(args.command), baseJson, resultJson, finishedAt ?? '',
      k.eventChannel(sid), this.#eventsKeep,
      // The script fills in the index: its placeholder must be the event record's first key (createRecord-13.lua).
      ...ledgerEventArgs(type, { sid, jobId: args.jobId ?? null, at: now.toISOString(), record: final ? Object.assign({ index: -1 }, record) : record }),
      preceding, args.jobGuard,
    )) as [number, number | string, number?, number?, number?, number?, string?, string?, string[]?];
    if (res[0] === ScriptCode.MISSING) return { kind: 'gone' };
    if (res[0] === ScriptCode.STALE_JOB) return { kind: 'stale_job', job: res[1] ? String(res[1]) : null };
    if (res[0] === ScriptCode.DUPLICATE) return { kind: 'duplicate', index: Number(res[1]) };
    if (res[0] === ScriptCode.TURN_FAILED) return { kind: 'turn_failed', marker: String(res[1]) };
    const index = (record.index = Number(res[1]));
    const run: RunAction = Number(res[4]) !== 1 ? null : Number(res[5]) === 1 ? 'wake' : 'start';
    const handover = run === 'wake' && res[6] !== undefined ? handoverOf(record, args.command, res[6], res[7] ?? '', res[8] ?? []) : undefined;
    return { kind: 'created', index, record, run, ...(handover ? { handover } : {}) };
  }

  /** Compare-and-set on the status, with events. `record` is the record before the change. */
  async transition(record: LedgerRecord, spec: TransitionSpec, jobId: string | null = null): Promise<TransitionOutcome> {
    const k = this.#keys;
    const sid = record.session;
    const at = new Date().toISOString();
    const f = spec.fields ?? {};
    // Onto blankRecord's shape (assembleRecord's reasons): onto {}, a copy and its event's JSON cost 7.1 µs, not 4.7.
    const next: LedgerRecord = Object.assign(blankRecord(), record, f.result, {
      status: spec.to,
      approval: f.approval ?? record.approval,
      started_at: f.started_at ?? record.started_at,
      executed_by: f.executed_by ?? record.executed_by,
      finished_at: f.finished_at ?? record.finished_at,
      injected: f.injected ?? record.injected,
    });
    next.timings = timingsOf(next);
    const pairs: string[] = [];
    // "+field": the record as the caller knows it has none, so the script reads no size first (a stale view only overcharges)
    const fresh = (name: string, had: unknown) => (had === null || had === undefined ? `+${name}` : name);
    if (f.result) pairs.push(fresh('result', record.finished_at), JSON.stringify(f.result));
    if (f.approval) pairs.push('approval', JSON.stringify(f.approval));
    if (f.started_at) pairs.push(fresh('started_at', record.started_at), f.started_at);
    if (f.executed_by) pairs.push(fresh('executed_by', record.executed_by), f.executed_by);
    if (f.finished_at) pairs.push(fresh('finished_at', record.finished_at), f.finished_at);
    if (f.injected !== undefined) pairs.push('injected', f.injected ? '1' : '0');
    if (spec.dropCommand) pairs.push('cmd', '');
    const events = spec.events.flatMap((type) => ledgerEventArgs(type, { sid, jobId, at, record: next, approval: spec.approval }));
    const becomesFinal = FINAL_STATUSES.has(spec.to) && spec.from.every((s) => !FINAL_STATUSES.has(s));
    const res = (await this.#redis.transition(
      k.record(sid, record.index), k.open(sid), k.turnState(sid, record.turn), k.eventSeq(sid), k.events(sid), k.sessionMeta(sid), k.sessionBytes(sid),
      spec.from.join(' '), spec.to, spec.unlessTurnFailed ? '1' : '0', record.index,
      becomesFinal ? '1' : '0', FAILURE_STATUSES.has(spec.to) ? '1' : '0',
      k.eventChannel(sid), this.#eventsKeep, spec.runOwner ?? '', spec.events.length, ...events, ...pairs,
    )) as [number, string | number];
    if (res[0] === ScriptCode.OK) return { ok: true, record: next };
    if (res[0] === ScriptCode.TURN_FAILED) return { ok: false, turnFailed: String(res[1]) };
    if (res[0] === ScriptCode.NOT_OWNER) return { ok: false, notOwner: String(res[1]) };
    return { ok: false, current: String(res[1]) };
  }

  async get(sid: string, index: number): Promise<LedgerRecord | null> {
    const h = await this.#redis.hgetall(this.#keys.record(sid, index));
    return h.status ? recordFromHash(index, h) : null;
  }

  /** What a worker reads to run a queued command, in one round trip (execution-load.ts). */
  async loadForExecution(sid: string, index: number): Promise<ExecutionLoad> {
    const k = this.#keys;
    const out = (await this.#redis.pipeline()
      .hgetall(k.record(sid, index))
      .hmget(k.sessionMeta(sid), 'deleted_at', 'running_job')
      .lrange(k.grants(sid), 0, -1)
      .exec()) ?? [];
    for (const [err] of out) if (err) throw err;
    const [deletedAt, runningJob] = out[1]![1] as (string | null)[];
    return executionLoad(index, out[0]![1] as Record<string, string>, deletedAt, runningJob, out[2]![1] as string[]);
  }

  /** The session's grants (from `approve_for_session` answers), as of now. */
  async grants(sid: string): Promise<Grant[]> {
    return parseGrants(await this.#redis.lrange(this.#keys.grants(sid), 0, -1));
  }

  /** The session's network grants: the host:port pairs its connections may open without asking again. */
  async networkGrants(sid: string): Promise<NetworkGrant[]> {
    return (await this.#redis.lrange(this.#keys.grants(sid), 0, -1)).map((g) => JSON.parse(g) as StoredGrant)
      .flatMap((g) => (g.tool === 'network' ? [{ host: g.host, port: g.port }] : []));
  }

  /** What the model said before the command, as kept by `create` ('' when nothing was). */
  async precedingText(sid: string, index: number): Promise<string> {
    return (await this.#redis.hget(this.#keys.record(sid, index), 'preceding')) ?? '';
  }

  /** The full command, for execution (absent once final and dropped). */
  async command(sid: string, index: number): Promise<Command | null> {
    const raw = await this.#redis.hget(this.#keys.record(sid, index), 'cmd');
    return raw ? (JSON.parse(raw) as Command) : null;
  }

  async statuses(sid: string, indexes: number[]): Promise<(LedgerStatus | null)[]> {
    if (indexes.length === 0) return [];
    const p = this.#redis.pipeline();
    for (const i of indexes) p.hget(this.#keys.record(sid, i), 'status');
    const out = await p.exec();
    return (out ?? []).map(([err, v]) => (err ? null : ((v as LedgerStatus | null) ?? null)));
  }

  /** `validate` false: records this code wrote and reads back on the command path (a turn's answer), not checked against the schema again. */
  async many(sid: string, indexes: number[], validate = true): Promise<LedgerRecord[]> {
    if (indexes.length === 0) return [];
    const p = this.#redis.pipeline();
    for (const i of indexes) p.hgetall(this.#keys.record(sid, i));
    const out = (await p.exec()) ?? [];
    const records: LedgerRecord[] = [];
    out.forEach(([err, h], j) => {
      if (err) throw err;
      const hash = h as Record<string, string>;
      if (hash.status) records.push(recordFromHash(indexes[j]!, hash, validate));
    });
    return records;
  }

  /** The indexes of the last `n` records, in execution order. */
  async lastIndexes(sid: string, n: number): Promise<number[]> {
    const count = Number((await this.#redis.get(this.#keys.ledgerCounter(sid))) ?? 0);
    const from = Math.max(1, count - n + 1);
    return Array.from({ length: Math.max(0, count - from + 1) }, (_, i) => from + i);
  }

  /** Status and approval of each record (the small fields that change), null where there is none. */
  async states(sid: string, indexes: number[]): Promise<({ status: LedgerStatus; approval: LedgerApproval | null } | null)[]> {
    const p = this.#redis.pipeline();
    for (const i of indexes) p.hmget(this.#keys.record(sid, i), 'status', 'approval');
    return ((await p.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      const [status, approval] = v as (string | null)[];
      return status ? { status: status as LedgerStatus, approval: approval ? (JSON.parse(approval) as LedgerApproval) : null } : null;
    });
  }

  /** A record's fixed part as stored (JSON bytes, unparsed), for readers that parse large ones off their event loop. */
  /** The full command's JSON while the record keeps it (null once dropped), unparsed. */
  async rawCommand(sid: string, index: number): Promise<Buffer | null> {
    const raw = await this.#redis.hgetBuffer(this.#keys.record(sid, index), 'cmd');
    return raw && raw.length > 0 ? raw : null;
  }

  async rawBase(sid: string, index: number): Promise<Buffer | null> {
    return this.#redis.hgetBuffer(this.#keys.record(sid, index), 'base');
  }

  /** The last `n` records, in execution order. */
  async tail(sid: string, n: number): Promise<LedgerRecord[]> {
    const count = Number((await this.#redis.get(this.#keys.ledgerCounter(sid))) ?? 0);
    const from = Math.max(1, count - n + 1);
    return this.many(sid, Array.from({ length: Math.max(0, count - from + 1) }, (_, i) => from + i));
  }

  /** The whole ledger in execution order (= queue order, = index order); `validate` false: this service's own reads, unchecked. */
  async list(sid: string, validate = true): Promise<LedgerRecord[]> {
    const n = Number((await this.#redis.get(this.#keys.ledgerCounter(sid))) ?? 0);
    const out: LedgerRecord[] = [];
    for (let from = 1; from <= n; from += 500) {
      const idx = Array.from({ length: Math.min(500, n - from + 1) }, (_, i) => from + i);
      out.push(...(await this.many(sid, idx, validate)));
    }
    return out;
  }

  async turnIndexes(sid: string, turn: number): Promise<number[]> {
    return (await this.#redis.lrange(this.#keys.turnCommands(sid, turn), 0, -1)).map(Number);
  }

  async indexOf(sid: string, turn: number, id: string): Promise<number | null> {
    const v = await this.#redis.hget(this.#keys.ledgerIds(sid), `${turn}:${id}`);
    return v === null ? null : Number(v);
  }

  /**
   * Marks a turn failed without a record (a parse error): every command
   * created after this call is recorded skipped; earlier ones are unaffected.
   */
  async failTurn(sid: string, turn: number, label: string): Promise<number> {
    const last = Number((await this.#redis.get(this.#keys.ledgerCounter(sid))) ?? 0);
    return Number(await this.#redis.failTurn(this.#keys.turnState(sid, turn), this.#keys.sessionMeta(sid), last, label));
  }

  /** The turn's earliest failure: commands with a larger index are skipped. */
  async turnFailure(sid: string, turn: number): Promise<{ index: number; id: string } | null> {
    const [index, id] = await this.#redis.hmget(this.#keys.turnState(sid, turn), 'failed', 'failed_id');
    return index === null || index === undefined ? null : { index: Number(index), id: id ?? '' };
  }

  /** How many records of the session are not final yet. */
  async openCount(sid: string): Promise<number> {
    return Number((await this.#redis.get(this.#keys.open(sid))) ?? 0);
  }

  /** Records the model has not seen yet, in order. */
  async uninjected(sid: string): Promise<LedgerRecord[]> {
    return (await this.list(sid, false)).filter((r) => !r.injected && FINAL_STATUSES.has(r.status));
  }

  async markInjected(sid: string, indexes: number[]): Promise<void> {
    if (indexes.length === 0) return;
    const p = this.#redis.pipeline();
    for (const i of indexes) p.hset(this.#keys.record(sid, i), 'injected', '1');
    await p.exec();
  }
}
