// The next command after an idle pause (services/sandbox/idle-pause.ts):
// its latency on a running container against on a paused one, the unpause
// included, in the same run and alternating sample by sample so the
// machine's noise falls on both. The target is what a pause may add to the
// next command: ≤ 15 ms at p50. Also `docker pause` and `docker unpause`
// alone through the Engine API, which is what the added time is made of.
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { containerName, SandboxManager, type Sandbox } from '../../services/sandbox/index.ts';
import { unpauseContainer } from '../../services/sandbox/idle-pause.ts';
import { percentile } from './stats.ts';

export const IDLE_PAUSE_HEADING = 'Sandbox: the next command after an idle pause';
export const ADDED_TARGET_MS = 15;

type Sample = { running: number[]; paused: number[]; pauseApi: number[]; unpauseApi: number[]; refused: string[] };

async function readOnce(sb: Sandbox): Promise<number> {
  const t0 = performance.now();
  const r = await sb.execute({ id: 'pause-bench', need_result: false, tool: 'read', path: 'bench/p.txt' });
  if (!r.ok) throw new Error(`read failed: ${r.error}`);
  return performance.now() - t0;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function sample(m: SandboxManager, docker: Docker, sid: string, n: number): Promise<Sample> {
  const sb = await m.sandboxFor(sid);
  const w = await sb.execute({ id: 'pause-bench-w', need_result: false, tool: 'write', path: 'bench/p.txt', content: 'x'.repeat(1023) + '\n' });
  if (!w.ok) throw new Error(`write failed: ${w.error}`);
  for (let i = 0; i < 5; i++) await readOnce(sb);
  const s: Sample = { running: [], paused: [], pauseApi: [], unpauseApi: [], refused: [] };
  while (s.paused.length < n) {
    s.running.push(await readOnce(sb));
    // As the sweep or an approval wait pauses it; the next command's execute unpauses it.
    // A pause can be refused (runc: "unable to freeze"; the sweep tries again later): counted, and the pair taken again.
    const paused = await m.pause(sid).catch((err: unknown) => void s.refused.push(String(err).slice(0, 200)));
    if (paused === false) throw new Error('the container was not paused');
    if (paused === undefined) {
      s.running.pop();
      continue;
    }
    s.paused.push(await readOnce(sb));
  }
  const c = docker.getContainer(containerName(m.options.namePrefix, sid));
  while (s.unpauseApi.length < n) {
    const p = await timed(() => c.pause()).catch((err: unknown) => void s.refused.push(String(err).slice(0, 200)));
    if (p === undefined) continue;
    // Through the manager's unpause (it waits out dockerd's flag when it lags), so the container is running after.
    s.unpauseApi.push(await timed(() => unpauseContainer(c, sid)));
    s.pauseApi.push(p);
  }
  return s;
}

export async function benchIdlePause(docker: Docker, o: { image: string; n: number }): Promise<{ text: string; met: boolean; addedP50: number }> {
  const prefix = `tfbip-${randomBytes(3).toString('hex')}-`;
  // Idle time of an hour: the sweep never pauses on its own here, the bench asks for each pause.
  const m = new SandboxManager({ docker, namePrefix: prefix, reapIntervalMs: 0, image: o.image, workspaceSpares: 0, idlePauseMs: 3_600_000 });
  let s: Sample;
  try {
    s = await sample(m, docker, `ses_pause${randomBytes(5).toString('hex')}`, o.n);
  } finally {
    await m.reap({ liveSessions: new Set() });
    await m.close();
  }
  const q = (xs: number[], p: number) => percentile([...xs].sort((a, b) => a - b), p);
  const rows: [string, number[]][] = [
    ['next command (read 1 KiB) on a running container', s.running],
    ['next command (read 1 KiB) on a paused container, unpause included', s.paused],
    ['`docker pause` alone (Engine API)', s.pauseApi],
    ['`docker unpause` alone (Engine API, unpauseContainer)', s.unpauseApi],
  ];
  const addedP50 = q(s.paused, 50) - q(s.running, 50);
  const addedP95 = q(s.paused, 95) - q(s.running, 95);
  const met = addedP50 <= ADDED_TARGET_MS;
  const text = [
    '| work | n | p50 ms | p95 ms |', '|---|---:|---:|---:|',
    ...rows.map(([name, xs]) => `| ${name} | ${xs.length} | ${q(xs, 50).toFixed(2)} | ${q(xs, 95).toFixed(2)} |`),
    '',
    `pauses refused by the runtime and taken again: ${s.refused.length}${s.refused.length ? ` (${s.refused[0]})` : ''}`,
    `added by the pause: ${addedP50.toFixed(2)} ms at p50, ${addedP95.toFixed(2)} ms at p95 (target ≤ ${ADDED_TARGET_MS} ms at p50): ${met ? 'MET' : 'NOT MET'}`,
  ].join('\n');
  return { text, met, addedP50 };
}
