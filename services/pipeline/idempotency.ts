import { createHash, randomBytes } from 'node:crypto';
import { log } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import { ScriptCode, codeOf } from './script-codes.ts';

// `Idempotency-Key` (API.md additions) in Redis, so every API process sees the
// same keys: one string per (API key, Idempotency-Key). A request takes the
// key with a short lease ("running", set only if absent: of two racing
// requests, on any processes, exactly one runs); the holder extends the lease
// while it works and, when it answered, stores the answer for 24 h, or gives
// the key back when it failed, so a retry runs afresh. A holder whose process
// died loses the key when its lease lapses. A stored answer counts against the
// API key's storage budget until it expires (scripts/idemAnswer-3.lua).

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** Long enough for a stalled event loop, short enough that a crashed holder frees the key soon. */
export const IDEMPOTENCY_LEASE_MS = 30_000;
/** Answers up to this size are kept for replays; a larger one is kept as its status and size only. */
export const IDEMPOTENT_ANSWER_MAX_BYTES = 1024 * 1024;
/** The key's string and the budget entry around the answer itself. */
const ENTRY_OVERHEAD_BYTES = 256;

/** An answer as replayed: `body` null when it was over the size kept. */
export type IdempotentAnswer = { status: number; contentType: string; body: string | null; bytes: number };

/** What holds a key: a request still running, or the answer of one that finished. */
export type IdempotencyState =
  | { state: 'running'; fingerprint: string }
  | { state: 'done'; fingerprint: string; answer: IdempotentAnswer };

type Stored = { s: 'running'; t: string; fp: string } | { s: 'done'; fp: string; status: number; type: string; body: string | null; bytes: number };

export type IdempotencyOptions = { ttlMs?: number; leaseMs?: number; maxAnswerBytes?: number };
type Store = { redis: PipelineRedis; keys: Keys; ttlMs: number; leaseMs: number; maxAnswerBytes: number };

/** The key, taken by this request: extend it while working, then answer or release. */
export class HeldKey {
  readonly #store: Store;
  readonly #key: string;
  readonly #owner: string;
  readonly #hash: string;
  /** exactly the value written: every later step checks the key still holds it */
  readonly #value: string;
  readonly #fingerprint: string;

  constructor(store: Store, at: { key: string; owner: string; hash: string; value: string; fingerprint: string }) {
    this.#store = store;
    this.#key = at.key;
    this.#owner = at.owner;
    this.#hash = at.hash;
    this.#value = at.value;
    this.#fingerprint = at.fingerprint;
  }

  /** Extends the lease every third of it until the returned function is called. */
  keepAlive(): () => void {
    const { redis, leaseMs } = this.#store;
    const timer = setInterval(() => {
      redis.idemHeld(this.#key, this.#value, 'extend', leaseMs).then((held) => {
        if (codeOf(held) === ScriptCode.NOT_HOLDER) log().warn({ idempotency_key_hash: this.#hash }, 'idempotency: the lease lapsed while the request ran; a retry may run it again');
      }, (err: unknown) => log().warn({ err, idempotency_key_hash: this.#hash }, 'idempotency: extending the lease failed'));
    }, Math.max(100, Math.floor(leaseMs / 3)));
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Stores the answer for replays (kept whole up to the size limit). False when the key was no longer this request's. */
  async answer(status: number, contentType: string, body: string): Promise<boolean> {
    const { redis, keys, ttlMs, maxAnswerBytes } = this.#store;
    const bytes = Buffer.byteLength(body);
    const done: Stored = { s: 'done', fp: this.#fingerprint, status, type: contentType, body: bytes <= maxAnswerBytes ? body : null, bytes };
    const value = JSON.stringify(done);
    const now = Date.now();
    const charged = Buffer.byteLength(value) + ENTRY_OVERHEAD_BYTES;
    const stored = await redis.idemAnswer(this.#key, keys.ownerRetired(this.#owner), keys.ownerRetiredBytes(this.#owner),
      this.#value, value, now + ttlMs, `idem:${this.#hash}`, charged, now);
    return codeOf(stored) === ScriptCode.OK;
  }

  /** Gives the key back (the request failed): a retry runs it afresh. */
  async release(): Promise<void> {
    await this.#store.redis.idemHeld(this.#key, this.#value, 'release');
  }
}

export class IdempotencyStore {
  readonly #s: Store;

  constructor(redis: PipelineRedis, keys: Keys, opts: IdempotencyOptions = {}) {
    this.#s = {
      redis, keys,
      ttlMs: opts.ttlMs ?? IDEMPOTENCY_TTL_MS,
      leaseMs: opts.leaseMs ?? IDEMPOTENCY_LEASE_MS,
      maxAnswerBytes: opts.maxAnswerBytes ?? IDEMPOTENT_ANSWER_MAX_BYTES,
    };
  }

  /** Takes `idempotencyKey` of `owner` for a request with this fingerprint, or returns what holds it. */
  async take(owner: string, idempotencyKey: string, fingerprint: string): Promise<HeldKey | IdempotencyState> {
    const hash = hashOf(idempotencyKey);
    const key = this.#s.keys.idempotency(owner, hash);
    const value = JSON.stringify({ s: 'running', t: randomBytes(16).toString('hex'), fp: fingerprint } satisfies Stored);
    const current = await this.#s.redis.idemReserve(key, value, this.#s.leaseMs);
    if (current === null) return new HeldKey(this.#s, { key, owner, hash, value, fingerprint });
    return stateOf(String(current));
  }

  /** What holds the key now; null when nothing does (never used, expired, or given back). */
  async read(owner: string, idempotencyKey: string): Promise<IdempotencyState | null> {
    const raw = await this.#s.redis.get(this.#s.keys.idempotency(owner, hashOf(idempotencyKey)));
    return raw === null ? null : stateOf(raw);
  }
}

const hashOf = (idempotencyKey: string) => createHash('sha256').update(idempotencyKey).digest('hex');

function stateOf(raw: string): IdempotencyState {
  const v = JSON.parse(raw) as Stored;
  if (v.s === 'running') return { state: 'running', fingerprint: v.fp };
  return { state: 'done', fingerprint: v.fp, answer: { status: v.status, contentType: v.type, body: v.body, bytes: v.bytes } };
}
