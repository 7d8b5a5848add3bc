// The next command after an idle pause (services/sandbox/idle-pause.ts):
// its latency on a running container against on a paused one, the unpause
// included, in the same run and alternating sample by sample so the
// machine's noise falls on both. The target is what a pause may add to the
// next command: ≤ 15 ms at p50. Two managers, one per way of freezing
// (`pauseWith`: the cgroup freezer written directly, and `docker pause`, the
// baseline), sampled in turns in the same run; also `docker pause` and
// `docker unpause` alone through the Engine API.
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { containerName, SandboxManager, type Sandbox } from '../../services/sandbox/index.ts';
import { unpauseContainer } from '../../services/sandbox/frozen-container.ts';
import type { PauseWith } from '../../services/sandbox/frozen-container.ts';
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

const emptySample = (): Sample => ({ running: [], paused: [], pauseApi: [], unpauseApi: [], refused: [] });

/** One pair: the read on the running container, then paused (as the sweep or an approval wait does) and read again. */
async function pair(m: SandboxManager, sb: Sandbox, sid: string, s: Sample): Promise<void> {
  for (;;) {
    const running = await readOnce(sb);
    // A pause can be refused (runc: "unable to freeze"; the sweep tries again later): counted, and the pair taken again.
    const paused = await m.pause(sid).catch((err: unknown) => void s.refused.push(String(err).slice(0, 200)));
    if (paused === false) throw new Error('the container was not paused');
    if (paused === undefined) continue;
    s.running.push(running);
    s.paused.push(await readOnce(sb));
    return;
  }
}

async function opened(m: SandboxManager, sid: string): Promise<Sandbox> {
  const sb = await m.sandboxFor(sid);
  const w = await sb.execute({ id: 'pause-bench-w', need_result: false, tool: 'write', path: 'bench/p.txt', content: 'x'.repeat(1023) + '\n' });
  if (!w.ok) throw new Error(`write failed: ${w.error}`);
  for (let i = 0; i < 5; i++) await readOnce(sb);
  return sb;
}

async function engineCalls(docker: Docker, m: SandboxManager, sid: string, s: Sample, n: number): Promise<void> {
  const c = docker.getContainer(containerName(m.options.namePrefix, sid));
  while (s.unpauseApi.length < n) {
    const p = await timed(() => c.pause()).catch((err: unknown) => void s.refused.push(String(err).slice(0, 200)));
    if (p === undefined) continue;
    // Through the manager's unpause (it waits out dockerd's flag when it lags), so the container is running after.
    s.unpauseApi.push(await timed(() => unpauseContainer(c, sid)));
    s.pauseApi.push(p);
  }
}

const MODES: PauseWith[] = ['auto', 'docker'];

export async function benchIdlePause(docker: Docker, o: { image: string; n: number }): Promise<{ text: string; met: boolean; addedP50: number }> {
  const prefix = `tfbip-${randomBytes(3).toString('hex')}-`;
  // Idle time of an hour: the sweep never pauses on its own here, the bench asks for each pause.
  const managers = MODES.map((pauseWith) => new SandboxManager({ docker, namePrefix: prefix, reapIntervalMs: 0, image: o.image, workspaceSpares: 0, idlePauseMs: 3_600_000, pauseWith }));
  const samples = MODES.map(emptySample);
  try {
    const sids = MODES.map(() => `ses_pause${randomBytes(5).toString('hex')}`);
    const sbs = await Promise.all(managers.map((m, i) => opened(m, sids[i]!)));
    // In turns, so that the machine's noise falls on both ways alike.
    for (let k = 0; k < o.n; k++) for (let i = 0; i < MODES.length; i++) await pair(managers[i]!, sbs[i]!, sids[i]!, samples[i]!);
    await engineCalls(docker, managers[1]!, sids[1]!, samples[1]!, o.n);
  } finally {
    await managers[0]!.reap({ liveSessions: new Set() });
    for (const m of managers) await m.close();
  }
  return report(samples[0]!, samples[1]!);
}

function report(cgroup: Sample, viaDocker: Sample): { text: string; met: boolean; addedP50: number } {
  const q = (xs: number[], p: number) => percentile([...xs].sort((a, b) => a - b), p);
  const rows: [string, number[], number[]][] = [
    ['next command (read 1 KiB) on a running container', cgroup.running, viaDocker.running],
    ['next command (read 1 KiB) on a paused container, thaw included', cgroup.paused, viaDocker.paused],
  ];
  const added = (s: Sample, p: number) => q(s.paused, p) - q(s.running, p);
  const addedP50 = added(cgroup, 50);
  const met = addedP50 <= ADDED_TARGET_MS;
  const refused = [...cgroup.refused, ...viaDocker.refused];
  const text = [
    '| work | n | cgroup freezer p50 / p95 ms | `docker pause` p50 / p95 ms |', '|---|---:|---:|---:|',
    ...rows.map(([name, a, b]) => `| ${name} | ${a.length} | ${q(a, 50).toFixed(2)} / ${q(a, 95).toFixed(2)} | ${q(b, 50).toFixed(2)} / ${q(b, 95).toFixed(2)} |`),
    `| **added by the pause** | | **${added(cgroup, 50).toFixed(2)}** / ${added(cgroup, 95).toFixed(2)} | ${added(viaDocker, 50).toFixed(2)} / ${added(viaDocker, 95).toFixed(2)} |`,
    `| \`docker pause\` alone (Engine API) | ${viaDocker.pauseApi.length} | | ${q(viaDocker.pauseApi, 50).toFixed(2)} / ${q(viaDocker.pauseApi, 95).toFixed(2)} |`,
    `| \`docker unpause\` alone (Engine API, unpauseContainer) | ${viaDocker.unpauseApi.length} | | ${q(viaDocker.unpauseApi, 50).toFixed(2)} / ${q(viaDocker.unpauseApi, 95).toFixed(2)} |`,
    '',
    `pauses refused by the runtime and taken again: ${refused.length}${refused.length ? ` (${refused[0]})` : ''}`,
    `added by the pause with the cgroup freezer (THINKFLOW_PAUSE_WITH=auto, the default): ${addedP50.toFixed(2)} ms at p50 (target ≤ ${ADDED_TARGET_MS} ms): ${met ? 'MET' : 'NOT MET'}`,
  ].join('\n');
  return { text, met, addedP50 };
}
