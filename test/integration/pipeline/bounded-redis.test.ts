import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { isStorageFull, readEvents } from '../../../services/pipeline/index.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { startOwnRedis, keysWithTtl, type OwnRedis } from '../own-redis.ts';
import { client, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

// Issue 18, "Redis grows without bound": a 12 MiB POST of edits made 49 MiB of
// keys with no TTL, still there after DELETE. Each test runs a redis-server of
// its own, so counting every key (SCAN) and filling memory touch nobody else.

const RETENTION_S = 604800;
const BODY = 65536;
const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const bytes = (s: string | null | undefined) => Buffer.byteLength(s ?? '', 'utf8');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Entry = Record<string, any> & { id: string; turn: number; status: string; tool: string };

async function service(redis: OwnRedis, name: string, env: Record<string, string> = {}) {
  const prefix = testPrefix(name);
  const boxes = sandboxPrefix(name);
  const svc = await startService(testConfig(prefix, { PORT: '0', REDIS_URL: redis.url, THINKFLOW_SANDBOX_PREFIX: boxes, ...env }), {});
  return { svc, prefix, boxes, c: client(svc.url!) };
}

/** Every key naming the session, with its TTL; and the keys of the instance left without one. */
async function sessionKeys(redis: OwnRedis, sid: string) {
  const all = await keysWithTtl(redis.client);
  const mine = [...all].filter(([k]) => k.includes(`{${sid}}`));
  return { mine, untimed: mine.filter(([, ttl]) => ttl <= 0 || ttl > RETENTION_S).map(([k, ttl]) => `${k} ${ttl}`) };
}

async function sessionMemory(redis: OwnRedis, sid: string): Promise<number> {
  let total = 0;
  for (const [k] of (await keysWithTtl(redis.client)).entries()) if (k.includes(`{${sid}}`)) total += Number(await redis.client.memory('USAGE', k, 'SAMPLES', 0));
  return total;
}

describe('bounded Redis: record bodies and retention (own redis-server)', () => {
  let redis: OwnRedis;
  let s: Awaited<ReturnType<typeof service>>;
  beforeAll(async () => {
    redis = await startOwnRedis();
    s = await service(redis, 'bounded');
  });
  afterAll(async () => {
    await s?.svc.close();
    await removeSandboxes(s?.boxes ?? 'tft-none-');
    await redis?.stop();
  });

  it('a 12 MiB POST of edits keeps ≤ 64 KiB per record with size, SHA-256 and truncated; after DELETE every key of the session has a TTL', async () => {
    const { c } = s;
    const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
    const markers = Array.from({ length: 11 }, (_, i) => `M${i + 1}\n`);
    expect((await c.text(`/v1/sessions/${sid}/commands`, `<tf-write id="1" path="big.txt">${markers.join('')}</tf-write>`)).status).toBe(200);
    // 2-, 3- and 1-byte characters, so a cut at 64 KiB must respect UTF-8
    const payloads = markers.map((_, i) => `${i}:` + 'é€ab'.repeat(160_000));
    const written = 'ü€x'.repeat(170_000);
    const body = [
      ...markers.map((m, i) => `<tf-edit id="${i + 1}" path="big.txt"><old>${m}</old><new>${payloads[i]}</new></tf-edit>`),
      `<tf-write id="12" path="w.txt">${written}</tf-write>`,
    ].join('\n');
    expect(bytes(body)).toBeGreaterThan(12 * 1024 * 1024);
    const res = await c.text(`/v1/sessions/${sid}/commands`, body);
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: { id: string; status: string }[] };
    expect(results.map((r) => r.status)).toEqual(Array(12).fill('succeeded'));

    const entries = ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries.filter((e) => e.turn === 2);
    expect(entries).toHaveLength(12);
    for (const [i, e] of entries.entries()) {
      expect(bytes(e.content) + bytes(e.old_text) + bytes(e.new_text), e.id).toBeLessThanOrEqual(BODY);
      const full = i < 11 ? payloads[i]! : written;
      const f = i < 11 ? 'new_text' : 'content';
      expect(e).toMatchObject({ [`${f}_size`]: bytes(full), [`${f}_sha256`]: sha(full), [`${f}_truncated`]: true });
      expect(full.startsWith(e[f])).toBe(true); // a prefix, cut at a character boundary
      expect(bytes(e[f])).toBeGreaterThan(BODY / 2 - 8);
      if (i < 11) expect(e).toMatchObject({ old_text: markers[i], old_text_size: 3 + (i >= 9 ? 1 : 0), old_text_truncated: false });
    }
    // The workspace has the bytes the record only names.
    expect(sha(await (await c.get(`/v1/sessions/${sid}/files/w.txt`)).text())).toBe(entries[11]!.content_sha256);

    // In Redis: the full command (kept only to run it) is gone, each record hash is small, and so is the session.
    const r = s.svc.runtime.redis;
    for (let index = 2; index <= 13; index++) {
      const key = s.svc.runtime.keys.record(sid, index);
      expect(await r.hget(key, 'cmd')).toBe('');
      expect(Number(await r.memory('USAGE', key, 'SAMPLES', 0))).toBeLessThan(100 * 1024);
    }
    for (const e of await readEvents(r, s.svc.runtime.keys, sid)) {
      if (e.type === 'command_finished') expect(bytes(e.record.content) + bytes(e.record.old_text) + bytes(e.record.new_text)).toBeLessThanOrEqual(BODY);
    }
    const used = await sessionMemory(redis, sid);
    process.stderr.write(`bounded-redis: session keys after a ${(bytes(body) / 2 ** 20).toFixed(1)} MiB POST: ${(used / 2 ** 20).toFixed(2)} MiB\n`);
    expect(used).toBeLessThan(4 * 1024 * 1024);

    expect((await c.del(`/v1/sessions/${sid}`)).status).toBe(204);
    await sleep(4000); // the session's Worker closes after THINKFLOW_WORKER_IDLE_MS (3 s in tests): nothing it writes may stay
    const { mine, untimed } = await sessionKeys(redis, sid);
    expect(mine.length).toBeGreaterThan(20);
    expect(untimed).toEqual([]);
    // Still readable during the retention.
    expect((await (await c.get(`/v1/sessions/${sid}/ledger`)).json() as { entries: Entry[] }).entries).toHaveLength(13);
  }, 180_000);

  it('a command still running at DELETE finishes into keys that expire too', async () => {
    const { c } = s;
    const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
    // The failure lands in a turn-state key that does not exist yet at DELETE.
    const turn = c.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="1" cmd="sleep 3; exit 3" />\n<tf-touch id="2" path="later" />');
    const ledger = async () => ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
    for (let i = 0; i < 400 && (await ledger())[0]?.status !== 'running'; i++) await sleep(50);
    expect(await s.svc.runtime.redis.exists(s.svc.runtime.keys.turnState(sid, 1))).toBe(0);
    expect((await c.del(`/v1/sessions/${sid}`)).status).toBe(204);
    await turn;
    await sleep(4000);
    expect((await ledger()).map((e) => e.status)).toEqual(['failed', 'skipped']);
    expect(await s.svc.runtime.redis.exists(s.svc.runtime.keys.turnState(sid, 1))).toBe(1);
    const { untimed } = await sessionKeys(redis, sid);
    expect(untimed).toEqual([]);
  }, 120_000);
});

describe('bounded Redis: maxmemory with noeviction answers 503 storage_full and loses nothing (own redis-server)', () => {
  let redis: OwnRedis;
  let s: Awaited<ReturnType<typeof service>>;
  beforeAll(async () => {
    redis = await startOwnRedis(['--maxmemory', '16mb', '--maxmemory-policy', 'noeviction']);
    s = await service(redis, 'oom');
  });
  afterAll(async () => {
    await s?.svc.close();
    await removeSandboxes(s?.boxes ?? 'tft-none-');
    await redis?.stop();
  });

  /**
   * Fills Redis until even a tiny write is refused. Values stay small: a big
   * one's bytes sit in the query buffer, which Redis frees later, making room.
   * Called again right before each request, so the instance is full at that moment.
   */
  let filled = 0;
  async function fill(): Promise<number> {
    for (const size of [8 * 1024, 64]) {
      const chunk = 'f'.repeat(size);
      for (;;) {
        try {
          await redis.client.set(`filler:${filled++}`, chunk);
        } catch (err) {
          expect(isStorageFull(err)).toBe(true);
          break;
        }
      }
    }
    return filled;
  }

  it('a full Redis refuses a POST with 503 storage_full, writes nothing, and after room is freed the session goes on', async () => {
    const { c } = s;
    const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
    const first = await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="a.txt">one</tf-write>')).json() as { results: { status: string }[] };
    expect(first.results[0]!.status).toBe('succeeded');
    const before = await (await c.get(`/v1/sessions/${sid}/ledger`)).text();
    const k = s.svc.runtime.keys;
    const counters = async () => s.svc.runtime.redis.mget(k.ledgerCounter(sid), k.eventSeq(sid), k.turnCounter(sid));
    const countersBefore = await counters();
    await sleep(3500); // the session's Worker has closed: nothing in the background frees memory meanwhile

    expect(await fill()).toBeGreaterThan(100);
    await sleep(2500); // Redis trims idle query buffers: the room that makes is filled too
    await fill();
    const refused = await c.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="b.txt">two</tf-write>');
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('storage_full');
    await fill();
    const create = await c.json('/v1/sessions', {});
    expect(create.status).toBe(503);
    expect(((await create.json()) as { error: { code: string } }).error.code).toBe('storage_full');
    // The pipeline's atomic step itself: nothing of a refused command is written.
    await fill();
    await expect(s.svc.runtime.pipeline.enqueue(sid, 99, { id: '1', tool: 'touch', path: 'x', need_result: false }, 'api')).rejects.toSatisfy(isStorageFull);
    expect(await counters()).toEqual(countersBefore);
    expect(await (await c.get(`/v1/sessions/${sid}/ledger`)).text()).toBe(before);

    await redis.client.eval("for _, k in ipairs(redis.call('KEYS', 'filler:*')) do redis.call('DEL', k) end", 0);
    const again = await c.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="b.txt">two</tf-write>');
    expect(again.status).toBe(200);
    const after = ((await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] }).entries;
    expect(after.map((e) => [e.turn, e.id, e.status])).toEqual([[1, '1', 'succeeded'], [2, '1', 'succeeded']]);
    expect(JSON.parse(before).entries[0]).toEqual(after[0]);
    expect(await (await c.get(`/v1/sessions/${sid}/files/b.txt`)).text()).toBe('two');
  }, 120_000);
});

describe('bounded Redis: jobs (own redis-server, replay model)', () => {
  let redis: OwnRedis;
  let model: ReplayModel;
  let s: Awaited<ReturnType<typeof service>>;
  const content = 'ü'.repeat(100_000); // 200,000 bytes
  beforeAll(async () => {
    redis = await startOwnRedis();
    model = await startReplayModel({ transcripts: [{
      name: 'big', match: 'one big file', delay_ms: 0, chunk: 65536,
      turns: [{ reasoning: `<tf-write id="1" path="big.txt">${content}</tf-write>\n`, text: 'Written.' }],
    }] });
    s = await service(redis, 'boundjob', { OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted' });
  });
  afterAll(async () => {
    await s?.svc.close();
    await model?.close();
    await removeSandboxes(s?.boxes ?? 'tft-none-');
    await redis?.stop();
  });

  it('a finished job keeps its parsed command cut to 64 KiB, its keys expire, and its session\'s after DELETE', async () => {
    const { c } = s;
    const { job_id, session_id } = (await (await c.json('/v1/jobs', { task: 'one big file' })).json()) as { job_id: string; session_id: string };
    let status = '';
    for (let i = 0; i < 600 && !['succeeded', 'failed', 'cancelled'].includes(status); i++) {
      await sleep(100);
      status = ((await (await c.get(`/v1/jobs/${job_id}`)).json()) as { status: string }).status;
    }
    expect(status).toBe('succeeded');
    const parsed = (await readEvents(s.svc.runtime.redis, s.svc.runtime.keys, session_id)).find((e) => e.type === 'command_parsed');
    expect(parsed?.type === 'command_parsed' && parsed.command).toMatchObject({ content_size: 200_000, content_sha256: sha(content), content_truncated: true });
    expect(parsed?.type === 'command_parsed' && bytes(parsed.command.content)).toBeLessThanOrEqual(BODY);
    const jobKeys = [...(await keysWithTtl(redis.client, `${s.svc.runtime.keys.job(job_id)}*`))];
    expect(jobKeys.length).toBeGreaterThan(0);
    expect(jobKeys.filter(([, ttl]) => ttl <= 0 || ttl > RETENTION_S)).toEqual([]);

    expect((await c.del(`/v1/sessions/${session_id}`)).status).toBe(204);
    await sleep(4000);
    const { mine, untimed } = await sessionKeys(redis, session_id);
    expect(mine.length).toBeGreaterThan(10);
    expect(untimed).toEqual([]);
  }, 120_000);
});
