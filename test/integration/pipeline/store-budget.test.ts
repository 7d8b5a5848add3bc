import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../../services/main/index.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { startOwnRedis, keysWithTtl, type OwnRedis } from '../own-redis.ts';
import { client, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

// Issue 18, "no per-key limit on Redis bytes": one key could fill Redis to
// maxmemory (then every tenant gets 503 storage_full), also by creating,
// filling and deleting sessions in a loop. With THINKFLOW_STORE_BYTES_PER_KEY
// a key over its budget is refused, other keys are not, and a deleted
// session's bytes count until its keys expire. Own redis-server: it counts keys.

const BUDGET = 2 * 1024 * 1024;
const RETENTION_S = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** One turn of ten 100 KB writes: ten records of 64 KiB bodies, their events, the full command until final. */
const fill = (turn = 0) => Array.from({ length: 10 }, (_, i) => `<tf-write id="${turn * 100 + i + 1}" path="f${i}.txt">${String(i).repeat(100_000)}</tf-write>`).join('\n');
const FILL = fill();

let redis: OwnRedis;
let model: ReplayModel;
let svc: Awaited<ReturnType<typeof startService>>;
let boxes: string;
const c = (key: string) => client(svc.url!, key);

beforeAll(async () => {
  redis = await startOwnRedis();
  model = await startReplayModel({ transcripts: [{
    name: 'fill', match: 'fill my budget', delay_ms: 0, chunk: 65536,
    // each model call writes, then reads a file back: the read's result makes the job call the model again
    turns: Array.from({ length: 8 }, (_, n) => ({ reasoning: '', text: `${fill(n)}\n<tf-read id="${n * 100 + 99}" path="f0.txt" />\n` })),
  }] });
  boxes = sandboxPrefix('budget');
  svc = await startService(testConfig(testPrefix('budget'), {
    PORT: '0', REDIS_URL: redis.url, THINKFLOW_SANDBOX_PREFIX: boxes, OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted',
    THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter,k-j:submitter',
    THINKFLOW_STORE_BYTES_PER_KEY: String(BUDGET), THINKFLOW_RETENTION_S: String(RETENTION_S),
  }), {});
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await model?.close();
  await removeSandboxes(boxes ?? 'tft-none-');
  await redis?.stop();
});

async function session(key: string): Promise<Response> {
  return c(key).json('/v1/sessions', {});
}
const sidOf = async (res: Response) => ((await res.json()) as { session_id: string }).session_id;

async function expectQuota(res: Response): Promise<void> {
  expect(res.status).toBe(429);
  const body = (await res.json()) as { error: { code: string; message: string; details: { limit: number; used: number } } };
  expect(body.error.code).toBe('storage_quota_exceeded');
  expect(body.error.details.limit).toBe(BUDGET);
  expect(body.error.details.used).toBeGreaterThanOrEqual(BUDGET);
  expect(body.error.message).toContain('THINKFLOW_STORE_BYTES_PER_KEY');
}

/** Bytes Redis really uses for the session's keys. */
async function sessionMemory(sid: string): Promise<number> {
  let total = 0;
  for (const [k] of await keysWithTtl(redis.client)) if (k.includes(`{${sid}}`)) total += Number(await redis.client.memory('USAGE', k, 'SAMPLES', 0));
  return total;
}

describe('per-key Redis budget (THINKFLOW_STORE_BYTES_PER_KEY)', () => {
  it('key A filling its budget gets storage_quota_exceeded for turns, sessions and jobs; key B still works; DELETE frees it only when the keys expire', async () => {
    const sids: string[] = [];
    let refused: Response | null = null;
    for (let i = 0; i < 10 && !refused; i++) {
      const created = await session('k-a');
      if (created.status === 429) { refused = created; break; }
      const sid = await sidOf(created);
      sids.push(sid);
      const turn = await c('k-a').text(`/v1/sessions/${sid}/commands`, FILL);
      if (turn.status === 429) refused = turn;
      else expect(turn.status).toBe(200);
    }
    expect(refused).not.toBeNull();
    await expectQuota(refused!);
    // The accounting follows what Redis really holds for those sessions (within a factor of 2 either way).
    const owner = (await svc.runtime.pipeline.session(sids[0]!)).owner!;
    const charged = (await svc.runtime.pipeline.storage.usage(owner)).used;
    let real = 0;
    for (const sid of sids) real += await sessionMemory(sid);
    process.stderr.write(`store-budget: key A charged ${(charged / 2 ** 20).toFixed(2)} MiB, its session keys use ${(real / 2 ** 20).toFixed(2)} MiB\n`);
    expect(charged).toBeGreaterThan(real / 2);
    expect(charged).toBeLessThan(real * 2);
    await expectQuota(await c('k-a').text(`/v1/sessions/${sids[0]}/commands`, '<tf-touch id="1" path="x" />'));
    // The turn's checks go out together and are refused in a fixed order: an upload holding the session (409) first.
    const upload = await svc.runtime.pipeline.claims.claimUpload(sids[0]!);
    try {
      const busy = await c('k-a').text(`/v1/sessions/${sids[0]}/commands`, '<tf-touch id="2" path="x" />');
      expect(busy.status).toBe(409);
      expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('session_busy');
    } finally {
      await upload.release();
    }
    await expectQuota(await session('k-a'));
    await expectQuota(await c('k-a').json('/v1/jobs', { task: 'anything' }));

    // Another key is unaffected.
    const b = await session('k-b');
    expect(b.status).toBe(201);
    expect((await c('k-b').text(`/v1/sessions/${await sidOf(b)}/commands`, FILL)).status).toBe(200);

    // Deleting frees nothing until the deleted sessions' keys expire (THINKFLOW_RETENTION_S)...
    const deletedAt = Date.now();
    for (const sid of sids) expect((await c('k-a').del(`/v1/sessions/${sid}`)).status).toBe(204);
    await expectQuota(await session('k-a'));
    // ...then it is credited back, and the keys are really gone.
    let again: Response | null = null;
    while (Date.now() - deletedAt < 20_000) {
      const res = await session('k-a');
      if (res.status === 201) { again = res; break; }
      await expectQuota(res);
      await sleep(250);
    }
    expect(again?.status).toBe(201);
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(RETENTION_S * 1000);
    // Only sessions whose keys are gone were credited (the others may still count).
    const stillCounted = new Set(await redis.client.zrange(svc.runtime.keys.ownerRetired(owner), 0, -1));
    const credited = sids.filter((sid) => !stillCounted.has(sid));
    expect(credited.length).toBeGreaterThan(0);
    for (const sid of credited) expect(await redis.client.exists(svc.runtime.keys.sessionMeta(sid))).toBe(0);
    expect((await c('k-a').text(`/v1/sessions/${await sidOf(again!)}/commands`, '<tf-touch id="1" path="x" />')).status).toBe(200);
  }, 180_000);

  it('a job whose key goes over budget mid-run fails cleanly with storage_quota_exceeded', async () => {
    const { job_id } = (await (await c('k-j').json('/v1/jobs', { task: 'fill my budget' })).json()) as { job_id: string };
    let view: { status: string; error: string | null; turns: number } = { status: '', error: null, turns: 0 };
    for (let i = 0; i < 1200 && !['succeeded', 'failed', 'cancelled'].includes(view.status); i++) {
      await sleep(100);
      view = (await (await c('k-j').get(`/v1/jobs/${job_id}`)).json()) as typeof view;
    }
    expect(view.status).toBe('failed');
    expect(view.error).toMatch(/^storage_quota_exceeded: .*THINKFLOW_STORE_BYTES_PER_KEY/);
    expect(view.turns).toBeGreaterThan(0);
    expect(view.turns).toBeLessThan(8);
    // Key B is still fine.
    expect((await session('k-b')).status).toBe(201);
  }, 180_000);
});
