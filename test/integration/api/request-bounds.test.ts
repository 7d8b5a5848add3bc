// Issue 18, bounded work per request: a POST of 20,000 tags is refused at
// once with nothing recorded; one key's concurrent turns are capped while
// another key runs; the HTTP server bounds slow and silent clients and the
// connections of one address.
import net from 'node:net';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createRedis } from '../../../services/pipeline/redis.ts';
import { startHarness } from '../jobs/harness.ts';
import { client, newSession, REDIS_URL } from '../pipeline/helpers.ts';
import { servicesForSuite, suiteService } from '../suite-service.ts';

const svc = suiteService('bounds', { THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter', THINKFLOW_MAX_TURNS_PER_KEY: '4' });
const startService = servicesForSuite('bounds-http');
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;

beforeAll(() => {
  a = client(svc.url!, 'k-a');
  b = client(svc.url!, 'k-b');
});

const session = (c: typeof a) => newSession(c);

/** Keys and bytes under this service's own Redis prefix (no other test writes there). */
async function redisFootprint(prefix: string): Promise<{ keys: number; bytes: number }> {
  const r = createRedis(REDIS_URL, 'tf-test-footprint');
  try {
    let keys = 0;
    let bytes = 0;
    let cursor = '0';
    do {
      const [next, batch] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      for (const k of batch) {
        keys++;
        bytes += (await r.memory('USAGE', k)) ?? 0;
      }
    } while (cursor !== '0');
    return { keys, bytes };
  } finally {
    r.disconnect();
  }
}

describe('commands per turn (THINKFLOW_MAX_COMMANDS_PER_TURN)', () => {
  it('20,000 tags in one POST: 413 too_many_commands at once, nothing queued, recorded or started', async () => {
    const sid = await session(a);
    const prefix = svc.handle.runtime.config.redisPrefix;
    const before = await redisFootprint(prefix);
    const body = Array.from({ length: 20_000 }, (_, i) => `<tf-write id="${i}" path="f${i}.txt">x</tf-write>`).join('\n');
    const t0 = Date.now();
    const res = await a.text(`/v1/sessions/${sid}/commands`, body);
    const elapsed = Date.now() - t0;
    expect(res.status).toBe(413);
    const err = ((await res.json()) as { error: { code: string; message: string; details: { limit: number } } }).error;
    expect(err.code).toBe('too_many_commands');
    expect(err.message).toContain('THINKFLOW_MAX_COMMANDS_PER_TURN');
    expect(err.details.limit).toBe(1000);
    expect(elapsed).toBeLessThan(2000);
    expect(((await (await a.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: unknown[] }).entries).toEqual([]);
    const after = await redisFootprint(prefix);
    expect(after.keys - before.keys).toBeLessThanOrEqual(2);
    expect(after.bytes - before.bytes).toBeLessThan(64 * 1024);
    // At the cap it is a turn like any other (commands the policy forbids, so that nothing needs to run).
    const ok = await a.text(`/v1/sessions/${sid}/commands`, Array.from({ length: 1000 }, (_, i) => `<tf-bash id="${i}" cmd="curl x" />`).join(''));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { results: unknown[] }).results).toHaveLength(1000);
    await a.del(`/v1/sessions/${sid}`);
  }, 120_000);
});

describe('concurrent turns per key (THINKFLOW_MAX_TURNS_PER_KEY)', () => {
  it('12 concurrent large turns of one key: 4 run, 8 are 429 too_many at once; another key is unaffected', async () => {
    const sid = await session(a);
    const other = await session(b);
    const padding = 'p'.repeat(1024 * 1024);
    const turn = (i: number) => a.text(`/v1/sessions/${sid}/commands`, `${padding}<tf-bash id="${i + 1}" cmd="sleep 1" />`);
    const pending = Array.from({ length: 12 }, (_, i) => turn(i).then(async (r) => ({ status: r.status, body: await r.text(), at: Date.now() })));
    // While a's four turns hold their slots, b's turn runs.
    await new Promise((r) => setTimeout(r, 300));
    const bRes = await b.text(`/v1/sessions/${other}/commands`, '<tf-bash id="1" cmd="echo b" />');
    expect(bRes.status).toBe(200);
    const outcomes = await Promise.all(pending);
    expect(outcomes.filter((o) => o.status === 200)).toHaveLength(4);
    const refused = outcomes.filter((o) => o.status === 429);
    expect(refused).toHaveLength(8);
    for (const o of refused) {
      const e = (JSON.parse(o.body) as { error: { code: string; message: string; details: { cap: string; limit: number } } }).error;
      expect(e).toMatchObject({ code: 'too_many', details: { cap: 'THINKFLOW_MAX_TURNS_PER_KEY', limit: 4 } });
      expect(e.message).toContain('THINKFLOW_MAX_TURNS_PER_KEY=4');
    }
    // The refusals came before the turns that ran had finished.
    const firstDone = Math.min(...outcomes.filter((o) => o.status === 200).map((o) => o.at));
    expect(Math.max(...refused.map((o) => o.at))).toBeLessThan(firstDone);
    // Slots come back: the key can run a turn again.
    expect((await a.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="again" cmd="true" />')).status).toBe(200);
    await a.del(`/v1/sessions/${sid}`);
    await b.del(`/v1/sessions/${other}`);
  }, 120_000);
});

type Sock = { socket: net.Socket; closedAt: Promise<number>; data: () => string };

function open(url: string): Promise<Sock> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.on('error', () => {});
    const closedAt = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
    socket.once('connect', () => resolve({ socket, closedAt, data: () => data }));
    socket.once('error', reject);
  });
}

const closedWithin = (s: Sock, ms: number) => Promise.race([s.closedAt.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('the HTTP server bounds its clients', () => {
  it('connections past THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS are closed at once; silent ones after the headers timeout', async () => {
    const http = await startService({ THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: '5', THINKFLOW_HEADERS_TIMEOUT_MS: '1500' });
    const t0 = Date.now();
    const socks = await Promise.all(Array.from({ length: 8 }, () => open(http.url!)));
    const early = await Promise.all(socks.map((s) => closedWithin(s, 500)));
    expect(early.filter(Boolean)).toHaveLength(3);
    // The 5 kept ones send nothing: closed after the headers timeout, not held.
    const kept = socks.filter((_, i) => !early[i]);
    const closed = await Promise.all(kept.map((s) => s.closedAt));
    for (const at of closed) {
      expect(at - t0).toBeGreaterThanOrEqual(1400);
      expect(at - t0).toBeLessThan(5000);
    }
    // Freed: a request goes through again.
    expect((await fetch(`${http.url}/healthz`)).status).toBe(200);
  }, 30_000);

  it('a client that sends its headers too slowly gets 408; a body too slowly, 408; an idle keep-alive connection is closed', async () => {
    const http = await startService({ THINKFLOW_HEADERS_TIMEOUT_MS: '1000', THINKFLOW_REQUEST_TIMEOUT_MS: '2000', THINKFLOW_KEEPALIVE_TIMEOUT_MS: '300' });
    const slowHead = await open(http.url!);
    slowHead.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const slowBody = await open(http.url!);
    slowBody.socket.write('POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
    const idle = await open(http.url!);
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(await closedWithin(slowHead, 4000)).toBe(true);
    expect(slowHead.data()).toMatch(/^HTTP\/1\.1 408/);
    expect(await closedWithin(slowBody, 5000)).toBe(true);
    expect(slowBody.data()).toMatch(/^HTTP\/1\.1 408/);
    expect(await closedWithin(idle, 4000)).toBe(true);
    expect(idle.data()).toMatch(/^HTTP\/1\.1 200/);
  }, 30_000);
});

describe('commands per model call (a job)', () => {
  it('20,000 tags in one model call: cut at the cap, the turn failed and the job failed with too_many_commands', async () => {
    const tags = Array.from({ length: 20_000 }, (_, i) => `<tf-write id="${i + 1}" path="f${i}.txt">x</tf-write>`).join('\n');
    const h = await startHarness('bounds-job', [{ name: 'flood', match: 'flood the turn', chunk: 4096, delay_ms: 0, turns: [{ text: tags }] }],
      { THINKFLOW_MAX_COMMANDS_PER_TURN: '50' });
    onTestFinished(() => h.close());
    const job = await h.submit({ task: 'flood the turn', limits: { max_turns: 2, max_commands: 100_000, timeout_s: 120 } });
    const view = await h.waitFinal(job.job_id, 60_000);
    expect(view).toMatchObject({ status: 'failed', turns: 1 });
    expect(view.error).toContain('too_many_commands');
    expect(view.error).toContain('THINKFLOW_MAX_COMMANDS_PER_TURN');
    const ledger = await h.ledger(job.session_id);
    expect(ledger.length).toBeLessThanOrEqual(50);
    expect(ledger.every((r) => ['succeeded', 'skipped'].includes(r.status as string))).toBe(true);
  }, 120_000);
});
