import { execFileSync, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../services/main/index.ts';
import { createKeys } from '../../services/pipeline/index.ts';
import { startOwnRedis, type OwnRedis } from '../integration/own-redis.ts';
import { removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../integration/pipeline/helpers.ts';
import { serveChild, until } from './helpers.ts';

// Issue 23: a worker killed with `kill -9` leaves no warm sandbox behind. Its
// warm ids wait in the Redis list under its process id; the surviving worker
// finds it dead by its heartbeat (pipeline/worker-liveness.ts) and removes the
// ids it still lists, with their containers, volumes and images.

const children: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanups.reverse()) await f().catch(() => {});
});

const containersOf = (boxes: string) => execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${boxes}`]).toString().split('\n').filter(Boolean);

describe('kill -9 of a worker with warm sandboxes', () => {
  it('a survivor removes them within seconds: no warm container, no listed id is left', async () => {
    const redis: OwnRedis = await startOwnRedis();
    cleanups.push(() => redis.stop());
    const prefix = testPrefix('wpkill');
    const boxes = sandboxPrefix('wpkill');
    const keys = createKeys(prefix);
    // The survivor makes none of its own (pool 0), so every container of the prefix is the dead one's.
    const cfg = testConfig(prefix, { REDIS_URL: redis.url, PORT: '0', THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_WARM_POOL: '0' });
    const survivor = await startService(cfg, {});
    cleanups.push(async () => { await survivor.close(); await removeSandboxes(boxes); });
    const maker = await serveChild('worker', {
      REDIS_URL: redis.url, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: cfg.policyDir, THINKFLOW_SANDBOX_PREFIX: boxes,
      THINKFLOW_API_KEYS: '', THINKFLOW_WARM_POOL: '2',
      ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
    }, children);
    const r = survivor.runtime.redis;
    const entries = await until('the maker\'s two warm sandboxes', async () => {
      const list = await r.lrange(keys.warmIds(), 0, -1);
      return list.length === 2 ? list : undefined;
    }, 60_000);
    expect(containersOf(boxes)).toHaveLength(2);
    const killedAt = Date.now();
    maker.child.kill('SIGKILL');
    await maker.exited;
    await until('the dead maker\'s warm containers gone', async () => (containersOf(boxes).length === 0 ? true : undefined), 20_000);
    const tookMs = Date.now() - killedAt;
    console.log(`warm pool: a dead maker's ${entries.length} warm sandboxes removed ${tookMs} ms after its kill -9`);
    expect(await r.lrange(keys.warmIds(), 0, -1)).toEqual([]);
    expect(tookMs).toBeLessThan(15_000);
  }, 120_000);
});
