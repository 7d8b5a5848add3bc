import { execFileSync } from 'node:child_process';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalId } from '../../../services/api/middleware/auth.ts';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { createRedis, WarmPool, warmSandboxesOf } from '../../../services/pipeline/index.ts';
import { client, cleanupPrefix, REDIS_URL, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

// Warm sandboxes (THINKFLOW_WARM_POOL): made before a session asks, handed to
// exactly one new session by a Redis LPOP, refilled, and never left behind.
const docker = new Docker();
const prefix = testPrefix('warm');
const boxes = sandboxPrefix('warm');
let svc: ServiceHandle;
let api: ReturnType<typeof client>;

const pool = () => svc.runtime.pool!.warm!;
const containersOf = (sid: string) => docker.listContainers({ all: true, filters: { label: [`thinkflow.session=${sid}`] } });
const listed = async () => (await svc.runtime.redis.lrange(svc.runtime.keys.warmIds(), 0, -1)).map((e) => e.split(' ')[0]!);

async function newSession(): Promise<string> {
  const res = await api.json('/v1/sessions', {});
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

async function run(sid: string, body: string) {
  const res = await api.text(`/v1/sessions/${sid}/commands`, body);
  expect(res.status).toBe(200);
  return ((await res.json()) as { results: { status: string; stdout?: string }[] }).results;
}

beforeAll(async () => {
  svc = await startService(testConfig(prefix, { PORT: '0', THINKFLOW_API_KEYS: '', THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_WARM_POOL: '2' }), {});
  api = client(svc.url!);
  await pool().filled();
});
afterAll(async () => {
  await svc?.close();
  await cleanupPrefix(prefix);
  await removeSandboxes(boxes);
});

describe('warm pool', () => {
  it('holds its size, ready before any session: running, hardened, labelled for the id it waits with', async () => {
    const ids = await listed();
    expect(ids).toHaveLength(2);
    for (const sid of ids) {
      const [c] = await containersOf(sid);
      expect(c?.State).toBe('running');
      const info = await docker.getContainer(c!.Id).inspect();
      expect(info.Config.Labels).toMatchObject({ 'thinkflow.managed': 'true', 'thinkflow.session': sid, 'thinkflow.kind': 'sandbox' });
      expect(info.HostConfig).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, Privileged: false, CapDrop: ['ALL'] });
      expect(info.HostConfig.SecurityOpt!.some((o: string) => o.startsWith('seccomp='))).toBe(true);
      expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    }
  });

  it('a new session takes a warm sandbox: its first command runs there at once, on an empty workspace, and the pool refills', async () => {
    const warm = await listed();
    const t0 = performance.now();
    const sid = await newSession();
    const results = await run(sid, '<tf-bash id="1" cmd="ls -A /workspace | grep -v thinkflow-private | wc -l; whoami" />');
    const firstMs = performance.now() - t0;
    const [rec] = ((await (await api.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { timings: Record<string, string> }[] }).entries;
    const t = rec!.timings;
    const ms = (a: string, b: string) => Date.parse(t[b]!) - Date.parse(t[a]!);
    console.log(`warm pool: POST /v1/sessions → first command's result in ${firstMs.toFixed(1)} ms; parsed→queued ${ms('parsed_at', 'queued_at')} ms, queued→started ${ms('queued_at', 'started_at')} ms, started→finished ${ms('started_at', 'finished_at')} ms`);
    expect(warm).toContain(sid);
    expect(results[0]).toMatchObject({ status: 'succeeded', stdout: '0\nsandbox\n' });
    expect(await containersOf(sid)).toHaveLength(1); // the warm one, not a second
    expect(await listed()).not.toContain(sid);
    await pool().filled(30_000);
    expect(await listed()).toHaveLength(2);
    // A baseline was taken when it was made: the change list is empty, not unavailable.
    const changes = await api.get(`/v1/sessions/${sid}/changes`);
    expect(changes.status).toBe(200);
  });

  it('refills only once this worker\'s commands pause: a container started beside them would take their CPU', async () => {
    await pool().filled(30_000);
    const sid = await newSession();
    const t0 = Date.now();
    const running = run(sid, '<tf-bash id="1" cmd="sleep 2.5" />');
    await new Promise((r) => setTimeout(r, 1800 - (Date.now() - t0)));
    // Taken 1.8 s ago, far past the takes' settleMs (300 ms): held back because the command still runs.
    expect(await listed()).toHaveLength(1);
    expect((await running)[0]).toMatchObject({ status: 'succeeded' });
    await pool().filled(30_000);
    expect(await listed()).toHaveLength(2);
  });

  it('never gives one warm sandbox to two sessions, even to sessions made at once', async () => {
    const sids = await Promise.all(Array.from({ length: 6 }, () => newSession()));
    expect(new Set(sids).size).toBe(6);
    const outs = await Promise.all(sids.map((sid, i) => run(sid, `<tf-write id="1" path="who.txt">${i}</tf-write><tf-read id="2" path="who.txt" />`)));
    expect(outs.map((r) => r[1]!.stdout)).toEqual(sids.map((_, i) => String(i)));
    for (const sid of sids) expect(await containersOf(sid)).toHaveLength(1);
    await pool().filled(60_000);
  });

  it('an id taken with no session behind it is removed by its maker; a dead maker\'s ids by a survivor', async () => {
    const { redis, keys } = svc.runtime;
    const sandboxes = warmSandboxesOf(svc.runtime.sandboxes)!;
    // A second maker in this process (its own id), quick to judge an orphan.
    const maker = new WarmPool({ redis, keys, processId: 'wtest-1', sandboxes }, { size: 1, checkMs: 100_000, orphanAfterMs: 300 });
    maker.start();
    await maker.filled();
    const entry = (await redis.lrange(keys.warmIds(), 0, -1)).find((e) => e.endsWith(' wtest-1'))!;
    const orphan = entry.split(' ')[0]!;
    expect(await redis.lrem(keys.warmIds(), 1, entry)).toBe(1); // taken, as by a create that then failed
    maker.poke(); // sees it taken
    await new Promise((r) => setTimeout(r, 500));
    maker.poke(); // past orphanAfterMs with no session: removed (and one made in its place)
    await expect.poll(async () => (await containersOf(orphan)).length, { timeout: 15_000 }).toBe(0);
    // A dead worker's listed ids: a survivor (dropDead, called by worker liveness) removes them and their sandboxes.
    await maker.filled();
    const made = (await redis.lrange(keys.warmIds(), 0, -1)).filter((e) => e.endsWith(' wtest-1')).map((e) => e.split(' ')[0]!);
    expect(made).toHaveLength(1);
    await pool().dropDead('wtest-1');
    expect(await containersOf(made[0]!)).toHaveLength(0);
    expect(await listed()).not.toContain(made[0]);
    await maker.close();
  });

  it('closing a maker removes an id taken from it that never became a session', async () => {
    const { redis, keys } = svc.runtime;
    const maker = new WarmPool({ redis, keys, processId: 'wtest-2', sandboxes: warmSandboxesOf(svc.runtime.sandboxes)! }, { size: 1, checkMs: 100_000 });
    maker.start();
    await maker.filled();
    const entry = (await redis.lrange(keys.warmIds(), 0, -1)).find((e) => e.endsWith(' wtest-2'))!;
    expect(await redis.lrem(keys.warmIds(), 1, entry)).toBe(1); // taken by a create that then died
    maker.poke(); // sees it taken (no session yet, not past orphanAfterMs)
    await new Promise((r) => setTimeout(r, 300));
    await maker.close();
    expect(await containersOf(entry.split(' ')[0]!)).toHaveLength(0);
  });

  it('a create that fails gives its warm id back; failing creates never make more containers than the pool\'s size', async () => {
    await pool().filled();
    const before = await listed();
    const count = async () => execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${boxes}`]).toString().split('\n').filter(Boolean).length;
    const containers = await count();
    for (let i = 0; i < 20; i++) {
      const res = await api.json('/v1/sessions', { policy: { this_is: 'not a policy' } });
      expect(res.status).toBe(400);
    }
    await new Promise((r) => setTimeout(r, 1500)); // the maker's checks ran meanwhile
    expect(new Set(await listed())).toEqual(new Set(before));
    expect(await count()).toBe(containers);
  });

  it('closing the worker withdraws its warm sandboxes: none is left', async () => {
    const ids = await listed();
    expect(ids.length).toBeGreaterThan(0);
    const { keys } = svc.runtime;
    await svc.close();
    const redis = createRedis(REDIS_URL, 'tf-test-warm');
    try {
      expect(await redis.lrange(keys.warmIds(), 0, -1)).toEqual([]);
    } finally {
      redis.disconnect();
    }
    for (const sid of ids) expect(await containersOf(sid)).toHaveLength(0);
  });
});

describe('warm pool: off', () => {
  it('THINKFLOW_WARM_POOL=0 makes nothing ahead: a session starts cold as before', async () => {
    const p2 = testPrefix('warm0');
    const b2 = sandboxPrefix('warm0');
    const s = await startService(testConfig(p2, { PORT: '0', THINKFLOW_API_KEYS: '', THINKFLOW_SANDBOX_PREFIX: b2, THINKFLOW_WARM_POOL: '0' }), {});
    try {
      expect(s.runtime.pool!.warm!.ready).toBe(0);
      await new Promise((r) => setTimeout(r, 1500));
      const ps = () => execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${b2}`]).toString().split('\n').filter(Boolean);
      expect(ps()).toEqual([]);
      expect(await s.runtime.redis.llen(s.runtime.keys.warmIds())).toBe(0);
      const c = client(s.url!);
      const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
      const res = (await (await c.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="a" />')).json()) as { results: { status: string }[] };
      expect(res.results[0]!.status).toBe('succeeded');
      expect(ps()).toHaveLength(1);
    } finally {
      await s.close();
      await cleanupPrefix(p2);
      await removeSandboxes(b2);
    }
  });
});

describe('warm pool: per-key caps', () => {
  it('a warm session takes a live slot of its key; at the key\'s cap the next session starts cold and the warm id stays', async () => {
    const p3 = testPrefix('warmcap');
    const b3 = sandboxPrefix('warmcap');
    const s = await startService(testConfig(p3, { PORT: '0', THINKFLOW_API_KEYS: 'k1:submitter', THINKFLOW_SANDBOX_PREFIX: b3, THINKFLOW_WARM_POOL: '2', THINKFLOW_MAX_RUNNING_PER_KEY: '1' }), {});
    try {
      await s.runtime.pool!.warm!.filled();
      const { redis, keys } = s.runtime;
      const ids = async () => (await redis.lrange(keys.warmIds(), 0, -1)).map((e) => e.split(' ')[0]!);
      const c = client(s.url!, 'k1');
      const create = async () => ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
      const warm = await ids();
      const a = await create();
      expect(warm).toContain(a);
      // It holds a running container before any command: the key's one live slot is its.
      expect(await redis.zrange(keys.ownerLive(principalId('k1')), 0, -1)).toEqual([a]);
      const left = await ids();
      const b = await create(); // over the cap with a warm sandbox: a cold session instead, as with no pool
      expect(warm).not.toContain(b);
      expect(await ids()).toEqual(left);
      expect(await redis.zrange(keys.ownerLive(principalId('k1')), 0, -1)).toEqual([a]);
    } finally {
      await s.close();
      await cleanupPrefix(p3);
      await removeSandboxes(b3);
    }
  });
});
