// A REST turn on a session this process knows opens in one round trip
// (pipeline/turn-open.ts, scripts/openTurn-2.lua): the session's state and the
// turn's number come from one script, sent with the key's claims; nothing is
// read first. Refusals keep the API's order and take no turn number. Real
// Redis and HTTP; the sandboxes are fakes (what runs is not the point here).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { PipelineError } from '../../../services/pipeline/index.ts';
import { FakeSandboxes } from '../pipeline/fake-sandboxes.ts';
import { cleanupPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

const prefix = testPrefix('turnopen');
let svc: ServiceHandle;

beforeAll(async () => {
  svc = await startService(testConfig(prefix, {
    PORT: '0', THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter', THINKFLOW_MAX_RUNNING_PER_KEY: '1',
  }), { sandboxes: new FakeSandboxes() });
});
afterEach(() => { vi.restoreAllMocks(); });
afterAll(async () => {
  await svc.close();
  await cleanupPrefix(prefix);
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
async function session(key: string): Promise<string> {
  const res = await fetch(`${svc.url}/v1/sessions`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body: '{}' });
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}
function turn(key: string, sid: string, body: string, type = 'text/plain'): Promise<Response> {
  return fetch(`${svc.url}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { ...auth(key), 'content-type': type }, body });
}
const write = (name: string) => `<tf-write id="1" path="${name}.txt">x</tf-write>`;
async function errorOf(res: Response): Promise<{ status: number; code: string; details?: Record<string, unknown> }> {
  const body = (await res.json()) as { error: { code: string; details?: Record<string, unknown> } };
  return { status: res.status, code: body.error.code, ...(body.error.details ? { details: body.error.details } : {}) };
}
/** the turn numbers of the session's records, in ledger order */
async function turns(sid: string): Promise<number[]> {
  return (await svc.runtime.pipeline.entries(sid)).map((r) => r.turn);
}

describe('a REST turn on a known session', () => {
  it('reads neither the session nor the turn counter apart: both come with the turn\'s opening', async () => {
    const sid = await session('k-a');
    expect((await turn('k-a', sid, write('a'))).status).toBe(200);
    const { redis, keys } = svc.runtime;
    const hmget = vi.spyOn(redis, 'hmget');
    const incr = vi.spyOn(redis, 'incr');
    expect((await turn('k-a', sid, write('b'))).status).toBe(200);
    expect(hmget.mock.calls.filter(([key]) => key === keys.sessionMeta(sid))).toEqual([]);
    expect(incr.mock.calls.filter(([key]) => key === keys.turnCounter(sid))).toEqual([]);
    expect(await turns(sid)).toEqual([1, 2]);
    await fetch(`${svc.url}/v1/sessions/${sid}`, { method: 'DELETE', headers: auth('k-a') });
  });

  it('is 429 at the key\'s live cap and takes no turn number: the next turn is the one after the last', async () => {
    const first = await session('k-b');
    const second = await session('k-b');
    expect((await turn('k-b', second, write('s1'))).status).toBe(200);
    expect((await turn('k-b', first, write('f1'))).status).toBe(429); // one session with a live container per key
    await fetch(`${svc.url}/v1/sessions/${second}`, { method: 'DELETE', headers: auth('k-b') });
    expect((await turn('k-b', first, write('f2'))).status).toBe(200);
    expect(await turns(first)).toEqual([1]);
    expect(Number(await svc.runtime.redis.get(svc.runtime.keys.turnCounter(first)))).toBe(1);
    await fetch(`${svc.url}/v1/sessions/${first}`, { method: 'DELETE', headers: auth('k-b') });
  });

  it('leaves the live slot its claim added when refused for storage: another request of the session may rely on it', async () => {
    // Review helper-60, F1: the refused turn gave the slot back, and the key went over THINKFLOW_MAX_RUNNING_PER_KEY.
    const p = svc.runtime.pipeline;
    const { redis, keys } = svc.runtime;
    const [s1, s2] = [await session('k-a'), await session('k-a')];
    const owner = p.rememberedSession(s1)!.owner!;
    const live = keys.ownerLive(owner);
    let open!: () => void;
    const held = new Promise<void>((r) => (open = r));
    vi.spyOn(p.storage, 'assert').mockImplementation(async () => {
      await held; // the check's round trip, held so the interleaving is fixed
      throw new PipelineError('storage_quota_exceeded', 'over budget (test)', { limit: 1, used: 2 });
    });
    const refused = turn('k-a', s1, write('q'));
    await expect.poll(() => redis.zscore(live, s1), { timeout: 2000 }).not.toBeNull(); // the turn's claim added s1
    expect(await p.live.claimLive(owner, s1)).toBe(false); // a read of s1's workspace meanwhile: already live
    open();
    expect(await errorOf(await refused)).toMatchObject({ status: 429, code: 'storage_quota_exceeded' });
    expect(await redis.zscore(live, s1)).not.toBeNull(); // still counted: its container serves that read
    await expect(p.live.claimLive(owner, s2)).rejects.toMatchObject({ code: 'too_many' }); // the cap of 1 holds
    expect(await turns(s1)).toEqual([]);
    vi.restoreAllMocks();
    for (const sid of [s1, s2]) await fetch(`${svc.url}/v1/sessions/${sid}`, { method: 'DELETE', headers: auth('k-a') });
  });

  it('is 409 session_busy while an upload holds the session, taking no turn number', async () => {
    const sid = await session('k-a');
    const { redis, keys } = svc.runtime;
    await redis.hset(keys.sessionMeta(sid), 'upload', `tok ${Date.now() + 60_000}`); // as sessionClaim writes it
    expect(await errorOf(await turn('k-a', sid, write('u')))).toEqual({ status: 409, code: 'session_busy', details: { session_id: sid, held_by: 'upload' } });
    await redis.hdel(keys.sessionMeta(sid), 'upload');
    expect((await turn('k-a', sid, write('v'))).status).toBe(200);
    expect(await turns(sid)).toEqual([1]);
    await fetch(`${svc.url}/v1/sessions/${sid}`, { method: 'DELETE', headers: auth('k-a') });
  });

  it('is 410 once deleted by another process (this one still remembers it), before a 415 or a body it would refuse', async () => {
    const sid = await session('k-a');
    const { redis, keys } = svc.runtime;
    await redis.hset(keys.sessionMeta(sid), 'deleted_at', new Date().toISOString()); // as another process's DELETE marks it
    expect((await errorOf(await turn('k-a', sid, write('d')))).status).toBe(410);
    expect((await errorOf(await turn('k-a', sid, write('d'), 'application/json'))).status).toBe(410);
    expect((await errorOf(await turn('k-a', sid, '<tf-write id="x" path="a">'.repeat(3)))).status).toBe(410);
    expect(await redis.get(keys.turnCounter(sid))).toBeNull();
  });

  it('is 404 for another key\'s session this process knows, and records nothing there', async () => {
    const sid = await session('k-a');
    expect((await turn('k-a', sid, write('mine'))).status).toBe(200); // known here from now on
    expect(await errorOf(await turn('k-b', sid, write('theirs')))).toMatchObject({ status: 404, code: 'session_not_found' });
    expect(await turns(sid)).toEqual([1]);
    expect(Number(await svc.runtime.redis.get(svc.runtime.keys.turnCounter(sid)))).toBe(1);
    await fetch(`${svc.url}/v1/sessions/${sid}`, { method: 'DELETE', headers: auth('k-a') });
  });
});
