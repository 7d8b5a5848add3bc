// The Idempotency-Key middleware's edges, on real Redis with short bounds: a
// request still running elsewhere (409 idempotency_in_progress after the wait,
// with Retry-After), a holder whose process died (its lease lapses, the retry
// runs), an answer too large to keep, and a failed answer that gives the key back.
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../../services/api/env.ts';
import { AppError } from '../../../services/api/errors.ts';
import { idempotent } from '../../../services/api/middleware/idempotency.ts';
import { jsonBody } from '../../../services/api/validate.ts';
import { createKeys, createRedis, deleteByPattern, HeldKey, IdempotencyStore } from '../../../services/pipeline/index.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `tfu-idem-${process.pid}-${Math.random().toString(36).slice(2, 7)}`;
const redis = createRedis(REDIS_URL, 'tf-test-idem');
const keys = createKeys(prefix);
afterAll(async () => {
  await deleteByPattern(redis, `${prefix}:*`);
  redis.disconnect();
});

/** An app with one idempotent route whose handler answers what `answer` says, counting its runs. */
function appWith(store: IdempotencyStore, answer: () => { status: 202 | 429; body: unknown }, waitMs = 300) {
  let runs = 0;
  const app = new Hono<AppEnv>();
  app.use('*', async (c, next) => {
    c.set('principal', { id: 'owner-1', role: 'submitter', name: 'o' });
    await next();
  });
  app.post('/x', jsonBody(), idempotent(store, { body: 'json', waitMs }), (c) => {
    runs++;
    const a = answer();
    return c.json(a.body as object, a.status);
  });
  app.onError((err, c) => {
    if (err instanceof AppError) return c.json(err.toBody(), err.status);
    throw err;
  });
  const send = async (idem: string, body = '{"a":1}') => {
    const res = await app.request('/x', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': idem }, body });
    return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after'), replayed: res.headers.get('idempotent-replayed') };
  };
  return { send, runs: () => runs };
}

const fingerprintOfA = async (store: IdempotencyStore, idem: string) => {
  // What the middleware stores for POST /x {"a":1}: read back after a first run.
  const state = await store.read('owner-1', idem);
  return state?.fingerprint;
};

describe('idempotent()', () => {
  it('a request still running elsewhere: the retry waits, then 409 idempotency_in_progress with Retry-After', async () => {
    const store = new IdempotencyStore(redis, keys, { leaseMs: 60_000 });
    const { send, runs } = appWith(store, () => ({ status: 202, body: { ok: 1 } }));
    // Learn the request's fingerprint, then free the key and hold it as another process would.
    await send('busy-probe');
    const fp = (await fingerprintOfA(store, 'busy-probe'))!;
    const held = await store.take('owner-1', 'busy-1', fp);
    expect(held).toBeInstanceOf(HeldKey);
    const started = Date.now();
    const r = await send('busy-1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(r).toMatchObject({ status: 409, retryAfter: '1', body: { error: { code: 'idempotency_in_progress' } } });
    expect(runs()).toBe(1);
    // The holder answers: the retry gets that answer, marked replayed.
    expect(await (held as HeldKey).answer(202, 'application/json', '{"from":"holder"}')).toBe(true);
    expect(await send('busy-1')).toMatchObject({ status: 202, body: { from: 'holder' }, replayed: 'true' });
    expect(runs()).toBe(1);
  });

  it('a holder whose process died: its lease lapses and the waiting retry runs the request', async () => {
    const store = new IdempotencyStore(redis, keys, { leaseMs: 150 });
    const { send, runs } = appWith(store, () => ({ status: 202, body: { ran: true } }), 2000);
    await send('dead-probe');
    const fp = (await fingerprintOfA(store, 'dead-probe'))!;
    expect(await store.take('owner-1', 'dead-1', fp)).toBeInstanceOf(HeldKey); // never extended, never answered
    const r = await send('dead-1');
    expect(r).toMatchObject({ status: 202, body: { ran: true }, replayed: null });
    expect(runs()).toBe(2);
  });

  it('a holder that lost its lease cannot overwrite the answer of the one that took over', async () => {
    const store = new IdempotencyStore(redis, keys, { leaseMs: 100 });
    const first = (await store.take('owner-1', 'lapsed-1', 'fp')) as HeldKey;
    await new Promise((r) => setTimeout(r, 200));
    const second = (await store.take('owner-1', 'lapsed-1', 'fp')) as HeldKey;
    expect(second).toBeInstanceOf(HeldKey);
    expect(await first.answer(202, 'application/json', '{"who":"first"}')).toBe(false);
    expect(await second.answer(202, 'application/json', '{"who":"second"}')).toBe(true);
    expect(await store.read('owner-1', 'lapsed-1')).toMatchObject({ state: 'done', answer: { body: '{"who":"second"}' } });
  });

  it('an answer over the size kept is replayed as 409 idempotency_answer_not_kept naming its status and size', async () => {
    const store = new IdempotencyStore(redis, keys, { maxAnswerBytes: 100 });
    const { send, runs } = appWith(store, () => ({ status: 202, body: { big: 'x'.repeat(500) } }));
    expect((await send('big-1')).status).toBe(202);
    const r = await send('big-1');
    expect(r).toMatchObject({ status: 409, body: { error: { code: 'idempotency_answer_not_kept', details: { status: 202, bytes: 510 } } } });
    expect(runs()).toBe(1);
  });

  it('a failed answer gives the key back: the retry runs afresh', async () => {
    const store = new IdempotencyStore(redis, keys);
    let n = 0;
    const { send, runs } = appWith(store, () => (n++ === 0 ? { status: 429, body: { error: 'busy' } } : { status: 202, body: { ok: true } }));
    expect((await send('flaky-1')).status).toBe(429);
    expect(await send('flaky-1')).toMatchObject({ status: 202, replayed: null });
    expect(await send('flaky-1')).toMatchObject({ status: 202, replayed: 'true' });
    expect(runs()).toBe(2);
  });

  it('the fingerprint is the canonical body: key order and spacing do not matter, values do', async () => {
    const store = new IdempotencyStore(redis, keys);
    const { send, runs } = appWith(store, () => ({ status: 202, body: { ok: true } }));
    expect((await send('canon-1', '{"b":[1,{"y":2,"x":1}],"a":"s"}')).status).toBe(202);
    expect(await send('canon-1', '{ "a": "s", "b": [1, {"x":1, "y":2}] }')).toMatchObject({ status: 202, replayed: 'true' });
    expect((await send('canon-1', '{"a":"s","b":[{"x":1,"y":2},1]}')).body.error.code).toBe('idempotency_conflict');
    expect(runs()).toBe(1);
  });
});
