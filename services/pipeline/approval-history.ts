import { z } from 'zod';
import type { ApprovalState, Approvals } from './approvals.ts';
import type { Keys } from './keys.ts';
import { isFinal, LedgerStatus, type LedgerRecord } from './ledger-record.ts';
import type { PipelineRedis } from './redis.ts';

// The approvals that were answered or expired, for `GET /v1/approvals?status=
// decided|expired|all` (API.md additions 2026-12-01): who decided, when, why,
// and what the command then did. The approval hash already holds the answer
// (it lives 7 days past its expiry); what was missing is a way to find the
// answered ones without a SCAN. That is one global zset, token → created_at ms,
// written like the pending zset: by its own command after the answer's script
// (Redis Cluster: it has no tag and shares no script with a session's keys).
// A token moves from the pending zset to this one, in that order, so a crash
// between leaves it pending, where listPending finds it answered and moves it
// again. Bounded: entries older than KEEP_MS or beyond MAX_ENTRIES are trimmed
// as it is written and read, a token whose approval is gone (its session was
// deleted and its keys expired) is dropped when a read meets it, and a deleted
// session's tokens leave it at DELETE (retention.ts).

/**
 * What an approved command did once it ran: the ledger record's final status,
 * its exit code and its error (absent when the record has none).
 */
export const ApprovalOutcome = z.object({
  status: LedgerStatus,
  exit_code: z.number().int().optional(),
  error: z.string().optional(),
});
export type ApprovalOutcome = z.infer<typeof ApprovalOutcome>;

/** Which approvals a listing asks for: `decided` = answered by a person or the system, `expired` = nobody answered in time. */
export const ApprovalListStatus = z.enum(['pending', 'decided', 'expired', 'all']);
export type ApprovalListStatus = z.infer<typeof ApprovalListStatus>;

export type ApprovalQuery = {
  status: ApprovalListStatus;
  job_id?: string;
  session_id?: string;
  decided_by?: string;
  /** created at or after (ms since the epoch) */
  since?: number;
  limit: number;
};
export type ApprovalWithOutcome = ApprovalState & { outcome?: ApprovalOutcome };
/** The ledger read an outcome needs (the pipeline's `records`). */
export type RecordReads = { get(sid: string, index: number): Promise<LedgerRecord | null> };

/** As long as an answered approval's hash is kept (approvals.ts KEEP_ANSWERED_S). */
const KEEP_MS = 7 * 24 * 3600_000;
/** The newest this many stay listed; older ones are trimmed away. */
export const MAX_ENTRIES = 10_000;
const BATCH = 200;
/** Decisions after which the command does not run: no outcome to show. */
const REFUSALS: ReadonlySet<string> = new Set(['pending', 'reject', 'expired']);

export class ApprovalHistory {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #approvals: Pick<Approvals, 'get' | 'listPending'>;

  constructor(redis: PipelineRedis, keys: Keys, approvals: Pick<Approvals, 'get' | 'listPending'>) {
    this.#redis = redis;
    this.#keys = keys;
    this.#approvals = approvals;
  }

  /** The token was just answered (or expired): it leaves the pending zset for this one. */
  async answered(sid: string, token: string): Promise<void> {
    const pub = await this.#redis.hget(this.#keys.approval(sid, token), 'public');
    const createdAt = pub ? (JSON.parse(pub) as { created_at: string }).created_at : new Date().toISOString();
    await this.move([{ token, created_at: createdAt }]);
  }

  /** Enters answered approvals (trimming by age and count), then takes them out of the pending zset. */
  async move(entries: Array<Pick<ApprovalState, 'token' | 'created_at'>>): Promise<void> {
    if (entries.length === 0) return;
    const key = this.#keys.approvalsDecided();
    const out = await this.#redis.multi()
      .zadd(key, ...entries.flatMap((e) => [Date.parse(e.created_at), e.token]))
      .zremrangebyscore(key, '-inf', Date.now() - KEEP_MS)
      .zremrangebyrank(key, 0, -(MAX_ENTRIES + 1))
      .exec();
    for (const [err] of out ?? []) if (err) throw err;
    await this.#redis.zrem(this.#keys.approvalsPending(), ...entries.map((e) => e.token));
  }

  /**
   * The approvals `q` asks for, at most `q.limit`: pending ones oldest first
   * (as the operator works through them), otherwise newest first by creation
   * (pending ones among them for `all`). Approved ones whose command is final
   * carry its outcome.
   */
  async list(q: ApprovalQuery, records: RecordReads): Promise<ApprovalWithOutcome[]> {
    const pending = q.status === 'pending' || q.status === 'all'
      ? (await this.#approvals.listPending()).filter((a) => matches(a, q)) : [];
    if (q.status === 'pending') return pending.slice(0, q.limit);
    const answered = await this.#answered(q);
    const rows = q.status === 'all'
      ? [...pending, ...answered].sort((a, b) => b.created_at.localeCompare(a.created_at)).slice(0, q.limit)
      : answered;
    return Promise.all(rows.map((a) => withOutcome(a, records)));
  }

  /** Newest first from the index, a batch at a time, until `q.limit` match; drops what is gone. */
  async #answered(q: ApprovalQuery): Promise<ApprovalState[]> {
    const key = this.#keys.approvalsDecided();
    await this.#redis.zremrangebyscore(key, '-inf', Date.now() - KEEP_MS);
    const out: ApprovalState[] = [];
    for (let offset = 0; out.length < q.limit;) {
      const tokens = await this.#redis.zrevrangebyscore(key, '+inf', q.since ?? '-inf', 'LIMIT', offset, BATCH);
      if (tokens.length === 0) break;
      const states = await Promise.all(tokens.map((t) => this.#approvals.get(t)));
      const gone = tokens.filter((_, i) => states[i] === null);
      if (gone.length > 0) await this.#redis.zrem(key, ...gone);
      offset += tokens.length - gone.length;
      for (const s of states) if (s && s.status !== 'pending' && matches(s, q) && out.length < q.limit) out.push(s);
    }
    return out;
  }
}

function matches(a: ApprovalState, q: ApprovalQuery): boolean {
  if (q.status === 'decided' && (a.status === 'pending' || a.status === 'expired')) return false;
  if (q.status === 'expired' && a.status !== 'expired') return false;
  if (q.status === 'pending' && a.status !== 'pending') return false;
  return (q.job_id === undefined || a.job_id === q.job_id)
    && (q.session_id === undefined || a.session_id === q.session_id)
    && (q.decided_by === undefined || a.decided_by === q.decided_by)
    && (q.since === undefined || Date.parse(a.created_at) >= q.since);
}

/**
 * The outcome of an approved command once its ledger record is final. A
 * network approval's index is the command that was connecting, not the
 * connection: it has none.
 */
async function withOutcome(a: ApprovalState, records: RecordReads): Promise<ApprovalWithOutcome> {
  if (REFUSALS.has(a.status) || a.tool === 'network') return a;
  const rec = await records.get(a.session_id, a.index);
  if (!rec || rec.id !== a.command_id || rec.turn !== a.turn || !isFinal(rec.status)) return a;
  const outcome: ApprovalOutcome = { status: rec.status };
  if (rec.exit_code !== null) outcome.exit_code = rec.exit_code;
  if (rec.error !== null) outcome.error = rec.error;
  return { ...a, outcome };
}
