import { createHash } from 'node:crypto';
import type { Context, MiddlewareHandler, Next } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { log } from '../../log/index.ts';
import { HeldKey, type IdempotencyStore, type IdempotentAnswer } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

// `Idempotency-Key` (API.md additions) on the REST writes: the same key with
// the same request from the same API key within 24 h gets the original answer
// (status and body, marked `Idempotent-Replayed: true`); another request under
// the key is a 409 `idempotency_conflict`. The state lives in Redis
// (pipeline/idempotency.ts), so it holds across API processes: of requests
// racing with one key exactly one runs, the others wait for its answer (a few
// seconds at most, then 409 `idempotency_in_progress` with Retry-After). Only
// a 2xx answer is kept; after any other the key is given back, so a retry runs
// afresh (a 429 or 503 is worth retrying). A request that holds a key runs to
// its end even when its client goes away: the retry is what gets its answer.

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;
/** How long a request waits for the answer of the same request running elsewhere. */
const WAIT_MS = 10_000;
const POLL_FIRST_MS = 25;
const POLL_MAX_MS = 250;
/** Deeper JSON is fingerprinted as its bytes (a recursion bound; such bodies are never re-serialized anyway). */
const CANONICAL_DEPTH = 64;

/** The header as the OpenAPI document shows it (the middleware checks it first, with the same bounds). */
export const IdempotencyHeaders = z.object({
  [IDEMPOTENCY_HEADER]: z.string().regex(KEY_SHAPE).optional().meta({
    description: 'Makes a retry safe: the same key and request from the same API key within 24 h gets the original answer ' +
      '(header `Idempotent-Replayed: true`) instead of running again. 1 to 255 printable ASCII characters, e.g. a UUID.',
  }),
});

/** The answers the header adds to a route, by status. */
export const IDEMPOTENCY_ERRORS: Record<number, string> = {
  400: 'the Idempotency-Key header is empty, longer than 255 characters or not printable ASCII (`invalid_idempotency_key`)',
  409: 'the Idempotency-Key was used with another request (`idempotency_conflict`), the request under it is still running ' +
    '(`idempotency_in_progress`, retry after Retry-After), or its answer was too large to keep for replays (`idempotency_answer_not_kept`)',
};

export type IdempotentOptions = {
  /** how the body is read for its fingerprint: `json` (canonical: key order and spacing do not matter) or `text` (as sent) */
  body: 'json' | 'text';
  /** @default 10 s */
  waitMs?: number;
};

/**
 * The Idempotency-Key behaviour for one route; runs after the body limits
 * (it reads the body) and before the handler.
 * @example route({ ..., idempotent: idempotent(pipeline.idempotency, { body: 'json' }) })
 */
export function idempotent(store: IdempotencyStore, opts: IdempotentOptions): MiddlewareHandler<AppEnv> {
  const waitMs = opts.waitMs ?? WAIT_MS;
  return async function idempotent(c: Context<AppEnv>, next: Next) {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined) return next();
    if (!KEY_SHAPE.test(key)) {
      throw new AppError(400, 'invalid_idempotency_key', `the ${IDEMPOTENCY_HEADER} header must be 1 to 255 printable ASCII characters`, {
        details: { header: IDEMPOTENCY_HEADER, length: key.length },
      });
    }
    const owner = c.var.principal.id;
    const fingerprint = await fingerprintOf(c, opts.body);
    const deadline = Date.now() + waitMs;
    for (let pause = POLL_FIRST_MS; ; pause = Math.min(POLL_MAX_MS, Math.ceil(pause * 1.5))) {
      const got = await store.take(owner, key, fingerprint);
      if (got instanceof HeldKey) return runHolding(c, next, got);
      if (got.fingerprint !== fingerprint) {
        throw new AppError(409, 'idempotency_conflict', `this ${IDEMPOTENCY_HEADER} was used with another request (method, path or body) within 24 h; use a new key for a new request`, {
          details: { header: IDEMPOTENCY_HEADER },
        });
      }
      if (got.state === 'done') return replay(c, got.answer);
      const left = deadline - Date.now();
      if (left <= 0) {
        c.header('retry-after', '1');
        throw new AppError(409, 'idempotency_in_progress', `the request with this ${IDEMPOTENCY_HEADER} is still running; retry to get its answer`, {
          details: { header: IDEMPOTENCY_HEADER, waited_ms: waitMs },
        });
      }
      await new Promise((r) => setTimeout(r, Math.min(pause, left)));
    }
  };
}

/** Runs the request holding the key, then keeps its answer (2xx) or gives the key back. */
async function runHolding(c: Context<AppEnv>, next: Next, held: HeldKey): Promise<void> {
  const stop = held.keepAlive();
  // A retry waits for this answer, so the work goes on when this client leaves.
  const raw = c.req.raw;
  c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers });
  try {
    await next();
  } catch (err) {
    stop();
    await giveBack(held);
    throw err;
  }
  stop();
  const res = c.res;
  if (res.status < 200 || res.status >= 300) return giveBack(held);
  const body = await res.clone().text();
  try {
    const stored = await held.answer(res.status, res.headers.get('content-type') ?? 'application/json', body);
    if (!stored) log().warn({ path: c.req.path }, 'idempotency: the lease lapsed before the answer was stored; a retry may run the request again');
  } catch (err) {
    // The work is done and answered; only the replay is lost (the key frees itself when its lease lapses).
    log().error({ err, path: c.req.path }, 'idempotency: storing the answer failed; a retry may run the request again');
  }
}

async function giveBack(held: HeldKey): Promise<void> {
  await held.release().catch((err: unknown) => log().error({ err }, 'idempotency: giving the key back failed; it frees itself when its lease lapses'));
}

function replay(c: Context<AppEnv>, answer: IdempotentAnswer): Response {
  if (answer.body === null) {
    throw new AppError(409, 'idempotency_answer_not_kept', `the request with this ${IDEMPOTENCY_HEADER} was answered ${answer.status}, ` +
      `but its answer (${answer.bytes} bytes) was too large to keep for replays; read the outcome from the resource (e.g. the session's ledger)`, {
      details: { header: IDEMPOTENCY_HEADER, status: answer.status, bytes: answer.bytes },
    });
  }
  return c.body(answer.body, answer.status as ContentfulStatusCode, { 'content-type': answer.contentType, 'idempotent-replayed': 'true' });
}

/** sha256 of what makes two requests the same: method, path and the (canonical) body. */
async function fingerprintOf(c: Context<AppEnv>, body: 'json' | 'text'): Promise<string> {
  const text = body === 'json' ? canonicalJson(await c.req.json(), await c.req.text()) : await c.req.text();
  return createHash('sha256').update(`${c.req.method} ${c.req.path}\n`).update(text).digest('hex');
}

/** JSON with object keys sorted at every level; past the depth bound, the body as sent. */
function canonicalJson(value: unknown, asSent: string): string {
  const out = (v: unknown, depth: number): string | null => {
    if (depth > CANONICAL_DEPTH) return null;
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    const parts: string[] = [];
    if (Array.isArray(v)) {
      for (const item of v) {
        const s = out(item, depth + 1);
        if (s === null) return null;
        parts.push(s);
      }
      return `[${parts.join(',')}]`;
    }
    for (const k of Object.keys(v).sort()) {
      const s = out((v as Record<string, unknown>)[k], depth + 1);
      if (s === null) return null;
      parts.push(`${JSON.stringify(k)}:${s}`);
    }
    return `{${parts.join(',')}}`;
  };
  return out(value, 0) ?? `raw:${asSent}`;
}
