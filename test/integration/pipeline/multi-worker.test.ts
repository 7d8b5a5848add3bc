import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { client, cleanupPrefix, removeSandboxes, sandboxPrefix, startWorker, testConfig, testPrefix } from './helpers.ts';

// Two worker processes and an API-only process on one Redis: BullMQ's global
// concurrency 1 must keep every session to one command at a time, in order,
// whichever process picks each command up.
const prefix = testPrefix('multi');
const boxes = sandboxPrefix('multi');
const children: ChildProcess[] = [];
let api: ServiceHandle | undefined;
afterAll(async () => {
  await api?.close();
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null)));
  await cleanupPrefix(prefix);
  await removeSandboxes(boxes);
});

type Entry = { turn: number; id: string; status: string; started_at: string; finished_at: string; executed_by: string };

describe('several worker processes (real Redis and Docker)', () => {
  it('keep each session strictly ordered and one-at-a-time across processes', async () => {
    // Ten sessions of one key send their turns at once: above the default per-key turn cap (8).
    const cfg = testConfig(prefix, { PORT: '0', THINKFLOW_ROLE: 'api', THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_MAX_TURNS_PER_KEY: '20' });
    api = await startService(cfg, {});
    // No linger: each busy period of a session is a run job of its own, which either process may take (hand-overs within a session).
    const env = { REDIS_URL: cfg.redisUrl, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: cfg.policyDir, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_RUN_LINGER_MS: '0' };
    const workers = await Promise.all([startWorker(env, children), startWorker(env, children)]);
    const c = client(api.url!);
    const SESSIONS = 10;
    const PER_TURN = 100;
    const sids = await Promise.all(Array.from({ length: SESSIONS }, async () => {
      const sid = ((await (await c.json('/v1/sessions', {})).json()) as { session_id: string }).session_id;
      for (let t = 0; t < 2; t++) {
        const body = Array.from({ length: PER_TURN }, (_, i) => `<tf-append id="${i + 1}" path="o.txt">${t * PER_TURN + i + 1}\n</tf-append>`).join('\n');
        const out = (await (await c.text(`/v1/sessions/${sid}/commands`, body)).json()) as { results: { status: string }[] };
        expect(out.results.filter((r) => r.status !== 'succeeded')).toEqual([]);
      }
      return sid;
    }));
    const by = new Map<string, number>();
    let hops = 0;
    for (const sid of sids) {
      expect(await (await c.get(`/v1/sessions/${sid}/files/o.txt`)).text())
        .toBe(Array.from({ length: 2 * PER_TURN }, (_, i) => `${i + 1}\n`).join(''));
      const { entries } = (await (await c.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Entry[] };
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i]!;
        by.set(e.executed_by, (by.get(e.executed_by) ?? 0) + 1);
        if (i === 0) continue;
        expect(e.started_at >= entries[i - 1]!.finished_at).toBe(true);
        if (e.executed_by !== entries[i - 1]!.executed_by) hops += 1;
      }
    }
    const pids = workers.map((w) => String(w.pid));
    expect([...by.keys()].map((k) => k.split(':').pop()).sort()).toEqual(pids.sort());
    process.stderr.write(`multi-worker: commands per worker ${JSON.stringify(Object.fromEntries(by))}, hand-overs within a session ${hops}\n`);
  }, 180_000);
});
