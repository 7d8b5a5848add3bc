import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import type { Evaluation, Grant, GrantOptions, GrantScope } from '../policy/index.ts';
import { targetOf, type Command } from '../protocol/index.ts';
import { ApprovalHistory } from './approval-history.ts';
import type { ApprovalContextFields } from './approval-context.ts';
import type { PublicApproval } from './events.ts';
import type { Keys } from './keys.ts';
import { ApprovalDecision, type LedgerApproval, type LedgerRecord } from './ledger-record.ts';
import type { PipelineRedis } from './redis.ts';
import { ScriptCode } from './script-codes.ts';

// Approvals of POLICY.md §5. A token (256 random bits) names one pending
// request; `answerApproval` answers it at most once, and treats an answer
// after `expires_at` as the expiry it is. The worker waiting at the command
// learns the answer from a pub/sub message, or from its own poll when a
// message was missed (e.g. during a reconnect).
// Redis Cluster: the approval hash is in its session's slot; the token's index
// entry (token → session) and the pending zset are global keys, each written
// by its own command, the index entries first (a crash between leaves an entry
// for an approval that does not exist, which readers treat as unknown and
// listPending drops; the answer's move from the pending zset to the history,
// after the script, is repaired the same way: approval-history.ts).

/**
 * An operator's answer (`POST /v1/approvals/:token`, the CLI, the dashboard):
 * the ledger's approval decisions but `expired`, which is the clock's, never a person's.
 */
export const ApprovalAnswer = ApprovalDecision.exclude(['expired']);
export type ApprovalAnswer = z.infer<typeof ApprovalAnswer>;
export type AnswerOutcome = 'ok' | 'unknown' | 'expired' | 'answered';
/** An `approve_edited` answer's record rewrite: the record's index, its new `base` and `cmd` (JSON). */
export type StoredEdit = { index: number; base: string; command: string };
export type ApprovalState = PublicApproval & { status: 'pending' | z.infer<typeof ApprovalDecision>; index: number } & ApprovalContextFields;
/** What each scope of `approve_for_session` covers, shown with the approval; `unavailable` says why a scope is not offered. */
export type GrantOptionView = { scope: GrantScope; covers: string | null; unavailable?: string };

const POLL_MS = 1000;

/** The wait was given up (the worker is shutting down); the approval stays pending for another worker. */
/**
 * 256 random bits, base64url, never starting with `-`: a token is typed as a
 * command-line argument (`thinkflow approve TOKEN`), where a leading dash
 * reads as an option (1 token in 64 could not be approved that way).
 */
export function newApprovalToken(): string {
  for (;;) {
    const token = randomBytes(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
}

export class ApprovalWaitAborted extends Error {
  constructor() {
    super('approval wait aborted');
    this.name = 'ApprovalWaitAborted';
  }
}
/** A pending-index entry this long past its approval's expiry is dropped (listPending). */
const STALE_AFTER_EXPIRY_MS = 3600_000;
/** Answered approvals are kept this long so a second answer still gets 409, not 404. */
const KEEP_ANSWERED_S = 7 * 24 * 3600;

export class Approvals {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;
  readonly #waiters = new Map<string, Set<() => void>>();
  #sub: Redis | null = null;
  #subscribed: Promise<unknown> | null = null;
  /** the answered and expired ones, with their outcomes (approval-history.ts) */
  readonly history: ApprovalHistory;

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
    this.history = new ApprovalHistory(redis, keys, this);
  }

  /** Gives this instance a subscriber connection so waits are woken at once. */
  attachSubscriber(sub: Redis): void {
    this.#sub = sub;
    sub.on('message', (channel: string, token: string) => {
      if (channel !== this.#keys.approvalChannel()) return;
      for (const wake of this.#waiters.get(token) ?? []) wake();
    });
    this.#subscribed = sub.subscribe(this.#keys.approvalChannel());
  }

  async request(args: {
    record: LedgerRecord; command: Command; evaluation: Evaluation; grants: GrantOptions; ttlS: number; jobId: string | null;
  } & ApprovalContextFields): Promise<ApprovalState> {
    const token = newApprovalToken();
    const now = Date.now();
    const expiresMs = now + args.ttlS * 1000;
    const state: ApprovalState = {
      token, session_id: args.record.session, job_id: args.jobId, command_id: args.record.id, turn: args.record.turn,
      tool: args.command.tool, target: targetOf(args.command), matched_rules: args.evaluation.matched_rules,
      justification: args.evaluation.matched_rules.map((r) => r.justification).filter(Boolean).join('; ') || args.evaluation.reason || null,
      created_at: new Date(now).toISOString(), expires_at: new Date(expiresMs).toISOString(),
      status: 'pending', decision: null, decided_by: null, reason: null, decided_at: null, index: args.record.index,
      grant_options: optionViews(args.grants),
      ...(args.context ? { context: args.context } : {}), ...(args.indirect ? { indirect: args.indirect } : {}),
    };
    const exact = args.grants.options.find((o) => o.scope === 'exact')?.grants ?? [];
    const prefix = args.grants.options.find((o) => o.scope === 'prefix')?.grants;
    await this.#store(state, expiresMs, args.ttlS, joinGrants(exact), prefix ? joinGrants(prefix) : undefined);
    return state;
  }

  /**
   * A connection waiting at the session's egress proxy (POLICY.md §8):
   * `tool: "network"`, `target: "host:port"`; `approve_for_session` grants
   * that host:port to the session (one grant line `{tool: "network", host, port}`).
   * `index`: the ledger index of the command that is connecting (the card shows the records before it).
   */
  async requestNetwork(args: {
    sessionId: string; jobId: string | null; recordId: string; host: string; port: number; target: string;
    evaluation: Evaluation; ttlS: number; index: number;
  }): Promise<ApprovalState> {
    const token = newApprovalToken();
    const now = Date.now();
    const expiresMs = now + args.ttlS * 1000;
    const state: ApprovalState = {
      token, session_id: args.sessionId, job_id: args.jobId, command_id: args.recordId, turn: 0,
      tool: 'network', target: args.target, matched_rules: args.evaluation.matched_rules,
      justification: args.evaluation.matched_rules.map((r) => r.justification).filter(Boolean).join('; ') || args.evaluation.reason || null,
      created_at: new Date(now).toISOString(), expires_at: new Date(expiresMs).toISOString(),
      status: 'pending', decision: null, decided_by: null, reason: null, decided_at: null, index: args.index,
      grant_options: [{ scope: 'exact', covers: `connections to ${args.target} for the rest of this session` }],
    };
    await this.#store(state, expiresMs, args.ttlS, JSON.stringify({ tool: 'network', host: args.host, port: args.port }));
    return state;
  }

  async #store(state: ApprovalState, expiresMs: number, ttlS: number, grant: string, grantPrefix?: string): Promise<void> {
    const key = this.#keys.approval(state.session_id, state.token);
    // A key per token with the approval's TTL: a field of one global hash outlived every approval.
    await Promise.all([
      this.#redis.set(this.#keys.approvalIndex(state.token), state.session_id, 'EX', ttlS + KEEP_ANSWERED_S),
      this.#redis.zadd(this.#keys.approvalsPending(), expiresMs, state.token),
    ]);
    await this.#redis.multi()
      .hset(key, {
        // One JSON grant per line: the answer script pushes each to the session's list.
        status: 'pending', expires_ms: String(expiresMs), grant,
        ...(grantPrefix !== undefined ? { grant_prefix: grantPrefix } : {}),
        public: JSON.stringify(state),
      })
      .expire(key, ttlS + KEEP_ANSWERED_S)
      .exec();
  }

  async get(token: string): Promise<ApprovalState | null> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
    const sid = await this.#redis.get(this.#keys.approvalIndex(token));
    if (!sid) return null;
    const h = await this.#redis.hgetall(this.#keys.approval(sid, token));
    if (!h.public) return null;
    const base = JSON.parse(h.public) as ApprovalState;
    return {
      ...base, status: h.status as ApprovalState['status'], decision: h.decision ?? null,
      decided_by: h.decided_by ?? null, reason: h.reason ?? null, decided_at: h.decided_at ?? null,
      ...(h.grant_scope ? { grant_scope: h.grant_scope as GrantScope } : {}),
    };
  }

  /** The exact grants an `approve_for_session` answer would give (stored with the request), for showing them before they are given. */
  async grantOf(token: string): Promise<Grant[]> {
    const sid = /^[A-Za-z0-9_-]{20,100}$/.test(token) ? await this.#redis.get(this.#keys.approvalIndex(token)) : null;
    const raw = sid ? await this.#redis.hget(this.#keys.approval(sid, token), 'grant') : null;
    return raw ? raw.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Grant) : [];
  }

  /** The card view stored by `saveView` (JSON), null until one is. */
  async view(sid: string, token: string): Promise<string | null> {
    return this.#redis.get(this.#keys.approvalView(sid, token));
  }

  /**
   * Stores the card view of a pending approval once (the first writer wins,
   * so every API process shows the same one), until a minute after it expires.
   */
  async saveView(sid: string, token: string, view: string, expiresAt: string): Promise<void> {
    const ms = Math.max(1000, Date.parse(expiresAt) - Date.now() + 60_000);
    await this.#redis.set(this.#keys.approvalView(sid, token), view, 'PX', ms, 'NX');
  }

  /** `edit`: the record's new base and command of an `approve_edited` answer (approval-edit.ts builds them). */
  async answer(
    token: string, decision: ApprovalAnswer | 'expire', reason: string | null, decidedBy: string, scope: GrantScope = 'exact', edit?: StoredEdit,
  ): Promise<AnswerOutcome> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return 'unknown';
    if ((decision === 'approve_edited') !== (edit !== undefined)) throw new Error('approve_edited goes with an edit, and only it');
    const sid = await this.#redis.get(this.#keys.approvalIndex(token));
    if (!sid) return 'unknown';
    const reply = await this.#redis.answerApproval(
      this.#keys.approval(sid, token), this.#keys.grants(sid), this.#keys.record(sid, edit?.index ?? 0), this.#keys.sessionBytes(sid),
      decision, reason ?? '', decidedBy, Date.now(), new Date().toISOString(), token, this.#keys.approvalChannel(), scope,
      edit?.base ?? '', edit?.command ?? '',
    );
    const [code, earlier] = Array.isArray(reply) ? reply.map(String) : [String(reply)];
    if (Number(code) === ScriptCode.OK || Number(code) === ScriptCode.EXPIRED) await this.history.answered(sid, token);
    if (Number(code) === ScriptCode.OK) return 'ok';
    if (Number(code) === ScriptCode.UNKNOWN) return 'unknown';
    if (Number(code) === ScriptCode.EXPIRED || earlier === 'expired') return 'expired';
    return 'answered';
  }

  /**
   * Pending, not yet expired, oldest first. Also the index's repair: a token
   * whose approval was answered (a crash between the answer and its removal)
   * moves to the history, and any token an hour past its expiry (one whose
   * approval was never written, or whose waiting worker died) leaves. A token
   * without an approval yet is left alone: it may be one being stored now.
   */
  async listPending(limit = 1000): Promise<ApprovalState[]> {
    const now = Date.now();
    const pending = this.#keys.approvalsPending();
    const [tokens] = await Promise.all([
      this.#redis.zrangebyscore(pending, now, '+inf', 'LIMIT', 0, limit),
      this.#redis.zremrangebyscore(pending, '-inf', now - STALE_AFTER_EXPIRY_MS),
    ]);
    const states = await Promise.all(tokens.map((t) => this.get(t)));
    const out = states.filter((a): a is ApprovalState => a?.status === 'pending');
    await this.history.move(states.filter((a): a is ApprovalState => a !== null && a.status !== 'pending'));
    return out.sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  /**
   * Blocks until the token is answered or expired (expiry = reject with
   * `approval timed out`), then returns its final state.
   */
  async waitForAnswer(token: string, signal?: AbortSignal): Promise<ApprovalState> {
    await this.#subscribed;
    for (;;) {
      const state = await this.get(token);
      if (!state) throw new Error(`approval ${token.slice(0, 8)}… vanished`);
      if (state.status !== 'pending') return state;
      const left = Date.parse(state.expires_at) - Date.now();
      if (left <= 0) {
        await this.answer(token, 'expire', null, 'system');
        continue;
      }
      if (signal?.aborted) throw new ApprovalWaitAborted();
      await this.#sleepOrWake(token, Math.min(left, this.#sub ? POLL_MS * 5 : POLL_MS), signal);
    }
  }

  #sleepOrWake(token: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.#waiters.get(token);
      if (!set) this.#waiters.set(token, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set!.delete(done);
        if (set!.size === 0) this.#waiters.delete(token);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

function joinGrants(grants: readonly Grant[]): string {
  return grants.map((g) => JSON.stringify(g)).join('\n');
}

function optionViews(g: GrantOptions): GrantOptionView[] {
  const views: GrantOptionView[] = g.options.map((o) => ({ scope: o.scope, covers: o.covers }));
  if (g.prefix_unavailable !== undefined) views.push({ scope: 'prefix', covers: null, unavailable: g.prefix_unavailable });
  return views;
}

/** The approval as the ledger record keeps it. */
export function ledgerApproval(s: ApprovalState): LedgerApproval {
  return {
    token: s.token, requested_at: s.created_at, expires_at: s.expires_at,
    decided_by: s.decided_by ?? null,
    decision: s.status === 'pending' ? null : s.status,
    reason: s.reason ?? null, decided_at: s.decided_at ?? null,
  };
}

/** The approval as events and the API show it. */
export function publicOf(s: ApprovalState): PublicApproval {
  // Listings carry the context and the file (up to 64 KiB); a session's events only name the approval.
  const { index: _index, context: _context, indirect: _indirect, ...rest } = s;
  return rest;
}
