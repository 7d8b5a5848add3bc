// Issue 20, "a retried POST /v1/jobs starts a second job": with an
// Idempotency-Key, the same request from the same API key within 24 h gets the
// original answer, also when the two requests hit two API processes at once;
// another request under the key is a 409. Two processes on one redis-server of
// the test's own: this one (API + worker) and a `thinkflow serve --role api`
// child. Real Docker for the /commands turns.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalId } from '../../../services/api/middleware/auth.ts';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { createKeys } from '../../../services/pipeline/keys.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { keysWithTtl, startOwnRedis, type OwnRedis } from '../own-redis.ts';
import { policyDir, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const KEYS = 'k-a:submitter,k-b:submitter';
const DAY_S = 24 * 3600;

let redis: OwnRedis;
let model: ReplayModel;
let svc: ServiceHandle;
let child: ChildProcess;
let urlA = '';
let urlB = '';
const prefix = testPrefix('idem');
const boxes = sandboxPrefix('idem');

beforeAll(async () => {
  redis = await startOwnRedis();
  model = await startReplayModel({ transcripts: [{ name: 'hello', match: 'say hello', delay_ms: 0, turns: [{ reasoning: '', text: 'hello' }] }] });
  const env = {
    REDIS_URL: redis.url, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_API_KEYS: KEYS,
    OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted', THINKFLOW_POLICY_DIR: policyDir(),
  };
  svc = await startService(testConfig(prefix, { ...env, PORT: '0' }), {});
  urlA = svc.url!;
  child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--role', 'api', '--port', '0'], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  urlB = await new Promise<string>((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited (${code}): ${log}`)));
  });
}, 120_000);
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  await svc?.close();
  await model?.close();
  await removeSandboxes(boxes);
  await redis?.stop();
});

type Sent = { status: number; body: any; replayed: boolean; retryAfter: string | null };

async function post(base: string, path: string, body: string, opts: { key?: string; idem?: string; type?: string; signal?: AbortSignal } = {}): Promise<Sent> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.key ?? 'k-a'}`, 'content-type': opts.type ?? 'application/json' };
  if (opts.idem !== undefined) headers['idempotency-key'] = opts.idem;
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body, ...(opts.signal ? { signal: opts.signal } : {}) });
  return { status: res.status, body: await res.json(), replayed: res.headers.get('idempotent-replayed') === 'true', retryAfter: res.headers.get('retry-after') };
}
const submit = (base: string, body: unknown, opts: { key?: string; idem?: string } = {}) => post(base, '/v1/jobs', JSON.stringify(body), opts);
const jobCount = () => redis.client.zcard(`${prefix}:jobs`);
const idemKey = (apiKey: string, idem: string) => createKeys(prefix).idempotency(principalId(apiKey), createHash('sha256').update(idem).digest('hex'));

describe('Idempotency-Key on POST /v1/jobs', () => {
  it('a retry with the same key and body gets the same job (202, marked replayed); no second job', async () => {
    const before = await jobCount();
    const first = await submit(urlA, { task: 'say hello', metadata: { n: 1, tag: 'x' } }, { idem: 'retry-1' });
    expect(first).toMatchObject({ status: 202, replayed: false });
    // Another process, keys in another order and other spacing: the same request.
    const again = await post(urlB, '/v1/jobs', '{ "metadata": {"tag":"x", "n":1},\n "task": "say hello" }', { idem: 'retry-1' });
    expect(again).toEqual({ status: 202, body: first.body, replayed: true, retryAfter: null });
    expect(await jobCount()).toBe(before + 1);
  });

  it('the same key with another body is 409 idempotency_conflict, and starts nothing', async () => {
    await submit(urlA, { task: 'say hello' }, { idem: 'conflict-1' });
    const before = await jobCount();
    const other = await submit(urlB, { task: 'say hello twice' }, { idem: 'conflict-1' });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'idempotency_conflict', details: { header: 'Idempotency-Key' } });
    // Used on another route, the key names another request too.
    const session = await post(urlA, '/v1/sessions', '{"task":"say hello"}', { idem: 'conflict-1' });
    expect(session.body.error?.code).toBe('idempotency_conflict');
    expect(await jobCount()).toBe(before);
  });

  it('two processes racing with one key make ONE job; every answer is that job', async () => {
    const before = await jobCount();
    const body = { task: 'say hello', metadata: { race: true } };
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(i % 2 ? urlB : urlA, body, { idem: 'race-1' })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(202));
    expect(new Set(answers.map((a) => a.body.job_id)).size).toBe(1);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
    expect(await jobCount()).toBe(before + 1);
  });

  it('thinkflow submit --idempotency-key: run twice (on two processes), one job', async () => {
    const before = await jobCount();
    const cli = (url: string) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const p = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'submit', 'say hello', '--idempotency-key', 'cli-1', '--json'], {
        cwd: ROOT, env: { ...process.env, THINKFLOW_URL: url, THINKFLOW_API_KEY: 'k-a' },
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
      p.on('close', (code) => resolve({ code, out, err }));
    });
    const [a, b] = [await cli(urlA), await cli(urlB)];
    expect([a.code, b.code], a.err + b.err).toEqual([0, 0]);
    expect(JSON.parse(b.out).job_id).toBe(JSON.parse(a.out).job_id);
    expect(await jobCount()).toBe(before + 1);
  }, 60_000);

  it('keys are scoped to the API key: another key with the same Idempotency-Key gets its own job', async () => {
    const body = { task: 'say hello', metadata: { scoped: true } };
    const a = await submit(urlA, body, { idem: 'shared-1', key: 'k-a' });
    const b = await submit(urlB, body, { idem: 'shared-1', key: 'k-b' });
    expect([a.status, b.status, b.replayed]).toEqual([202, 202, false]);
    expect(b.body.job_id).not.toBe(a.body.job_id);
    const other = await fetch(`${urlA}/v1/jobs/${a.body.job_id}`, { headers: { authorization: 'Bearer k-b' } });
    expect(other.status).toBe(404);
  });

  it('an answer is kept 24 h and counts against the key\'s storage budget until then', async () => {
    await submit(urlA, { task: 'say hello', metadata: { ttl: true } }, { idem: 'ttl-1' });
    const key = idemKey('k-a', 'ttl-1');
    const ttl = (await keysWithTtl(redis.client, key)).get(key)!;
    expect(ttl).toBeGreaterThan(DAY_S - 60);
    expect(ttl).toBeLessThanOrEqual(DAY_S);
    const hash = key.split(':idem:')[1]!;
    const owner = principalId('k-a');
    const charged = Number(await redis.client.hget(createKeys(prefix).ownerRetiredBytes(owner), `idem:${hash}`));
    expect(charged).toBeGreaterThan((await redis.client.strlen(key)));
    const until = Number(await redis.client.zscore(createKeys(prefix).ownerRetired(owner), `idem:${hash}`));
    expect(Math.abs(until - (Date.now() + DAY_S * 1000))).toBeLessThan(60_000);
  });

  it('a key that is not 1 to 255 printable characters is a 400 naming the header', async () => {
    for (const bad of ['', 'x'.repeat(256)]) {
      const r = await submit(urlA, { task: 'say hello' }, { idem: bad });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_idempotency_key', details: { header: 'Idempotency-Key' } });
      expect(r.body.error.message).toContain('Idempotency-Key');
    }
    expect((await submit(urlA, { task: 'say hello' }, { idem: 'y'.repeat(255) })).status).toBe(202);
  });

  it('an answer that is not 2xx is not kept: the retry runs again', async () => {
    const bad = await submit(urlA, { task: '' }, { idem: 'fail-then-ok' });
    expect(bad.status).toBe(400);
    expect(await redis.client.exists(idemKey('k-a', 'fail-then-ok'))).toBe(0);
    const fixed = await submit(urlA, { task: '' }, { idem: 'fail-then-ok' });
    expect(fixed.status).toBe(400);
    expect(fixed.replayed).toBe(false);
  });
});

describe('Idempotency-Key on POST /v1/sessions and /commands', () => {
  it('a retried session create gives the same session', async () => {
    const first = await post(urlA, '/v1/sessions', '{"approval":"never"}', { idem: 'ses-1' });
    const again = await post(urlB, '/v1/sessions', '{"approval":"never"}', { idem: 'ses-1' });
    expect(first.status).toBe(201);
    expect(again).toMatchObject({ status: 201, body: first.body, replayed: true });
  });

  it('a turn racing its own retry runs once; the retry waits and gets the same results', async () => {
    const sid = (await post(urlA, '/v1/sessions', '{}')).body.session_id as string;
    const turn = '<tf-bash id="1" cmd="sleep 1; date +%s%N" />';
    const [a, b] = await Promise.all([
      post(urlA, `/v1/sessions/${sid}/commands`, turn, { idem: 'turn-1', type: 'text/plain' }),
      new Promise((r) => setTimeout(r, 200)).then(() => post(urlB, `/v1/sessions/${sid}/commands`, turn, { idem: 'turn-1', type: 'text/plain' })),
    ]);
    expect(a.status).toBe(200);
    expect(a.body.results[0]).toMatchObject({ id: '1', status: 'succeeded' });
    expect(b).toMatchObject({ status: 200, body: a.body, replayed: true });
    const ledger = await (await fetch(`${urlA}/v1/sessions/${sid}/ledger`, { headers: { authorization: 'Bearer k-a' } })).json();
    expect(ledger.entries).toHaveLength(1);
    const other = await post(urlA, `/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="true" />', { idem: 'turn-1', type: 'text/plain' });
    expect(other.body.error.code).toBe('idempotency_conflict');
  }, 60_000);

  it('a turn whose client went away still runs to its end, and the retry gets its answer', async () => {
    const sid = (await post(urlA, '/v1/sessions', '{}')).body.session_id as string;
    const turn = '<tf-bash id="1" cmd="sleep 2; echo finished" />';
    const gone = post(urlA, `/v1/sessions/${sid}/commands`, turn, { idem: 'turn-2', type: 'text/plain', signal: AbortSignal.timeout(500) });
    await expect(gone).rejects.toThrow();
    const retry = await post(urlB, `/v1/sessions/${sid}/commands`, turn, { idem: 'turn-2', type: 'text/plain' });
    expect(retry).toMatchObject({ status: 200, replayed: true });
    expect(retry.body.results).toEqual([expect.objectContaining({ id: '1', status: 'succeeded', stdout: 'finished\n' })]);
    const ledger = await (await fetch(`${urlA}/v1/sessions/${sid}/ledger`, { headers: { authorization: 'Bearer k-a' } })).json();
    expect(ledger.entries).toHaveLength(1);
  }, 60_000);
});
