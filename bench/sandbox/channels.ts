// The executor's two channels side by side in one run: its control socket
// (the default) against dockerd's attach stream (the way before it), both
// with everything else the same (the SandboxManager, hardening, image).
// Rounds alternate between the two so the machine's noise falls on both.
// Measured per 1 KiB write: latency one at a time, then throughput and CPU
// with `sessions` sessions writing at once: this process's CPU (the
// service's share) and the whole machine's (dockerd, the shims and the
// executors included), read from /proc/stat.
import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import type { Command } from '../../services/protocol/index.ts';
import { containerName, SandboxManager, type Sandbox } from '../../services/sandbox/index.ts';
import { percentile } from './stats.ts';
import { commsMs, containersMs, DOCKER_COMMS, machineMs } from '../machine-cpu.ts';

export const CHANNELS_HEADING = 'Sandbox: the executor channel, control socket vs attach stream';
const KiB = 'x'.repeat(1023) + '\n';
type Channel = 'socket' | 'attach';

type Tally = { lat: number[]; cmds: number; wallMs: number; procUs: number; machineMs: number; dockerMs: number; containerMs: number };

async function writeOnce(sb: Sandbox, seq: number): Promise<void> {
  const cmd: Command = { id: String(seq), need_result: false, tool: 'write', path: `bench/w${seq % 4}.txt`, content: KiB };
  const r = await sb.execute(cmd);
  if (!r.ok) throw new Error(`write failed: ${r.error}`);
}

async function latencyRound(sb: Sandbox, n: number, t: Tally): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await writeOnce(sb, i);
    t.lat.push(performance.now() - t0);
  }
}

async function loadRound(sbs: Sandbox[], ids: string[], perSession: number, t: Tally): Promise<void> {
  const d0 = commsMs(DOCKER_COMMS);
  const c0 = containersMs(ids);
  const m0 = machineMs();
  const p0 = process.cpuUsage();
  const w0 = performance.now();
  await Promise.all(sbs.map(async (sb) => {
    for (let i = 0; i < perSession; i++) await writeOnce(sb, i);
  }));
  t.wallMs += performance.now() - w0;
  const p = process.cpuUsage(p0);
  t.procUs += p.user + p.system;
  t.machineMs += machineMs() - m0;
  t.dockerMs += commsMs(DOCKER_COMMS) - d0;
  t.containerMs += containersMs(ids) - c0;
  t.cmds += sbs.length * perSession;
}

export async function benchChannels(docker: Docker, o: { image: string; n: number; sessions: number; perSession: number; rounds: number }): Promise<{ text: string; met: boolean }> {
  const prefix = `tfbch-${randomBytes(3).toString('hex')}-`;
  const managers: Record<Channel, SandboxManager> = {
    socket: new SandboxManager({ docker, namePrefix: `${prefix}s-`, reapIntervalMs: 0, image: o.image, workspaceSpares: 0, executorChannel: 'socket' }),
    attach: new SandboxManager({ docker, namePrefix: `${prefix}a-`, reapIntervalMs: 0, image: o.image, workspaceSpares: 0, executorChannel: 'attach' }),
  };
  const tallies: Record<Channel, Tally> = {
    socket: { lat: [], cmds: 0, wallMs: 0, procUs: 0, machineMs: 0, dockerMs: 0, containerMs: 0 },
    attach: { lat: [], cmds: 0, wallMs: 0, procUs: 0, machineMs: 0, dockerMs: 0, containerMs: 0 },
  };
  try {
    const boxes = {} as Record<Channel, Sandbox[]>;
    const ids = {} as Record<Channel, string[]>;
    for (const ch of ['socket', 'attach'] as const) {
      boxes[ch] = [];
      for (let i = 0; i < o.sessions; i++) boxes[ch].push(await managers[ch].sandboxFor(`ses_ch${ch[0]}${i}${randomBytes(4).toString('hex')}`));
      for (const sb of boxes[ch]) await writeOnce(sb, 0); // warm: directories made, code paths compiled
      ids[ch] = await Promise.all(boxes[ch].map(async (sb) => (await docker.getContainer(containerName(`${prefix}${ch[0]}-`, sb.sessionId)).inspect()).Id));
    }
    for (let r = 0; r < o.rounds; r++) {
      const order: Channel[] = r % 2 === 0 ? ['socket', 'attach'] : ['attach', 'socket'];
      for (const ch of order) await latencyRound(boxes[ch][0]!, Math.ceil(o.n / o.rounds), tallies[ch]);
      for (const ch of order) await loadRound(boxes[ch], ids[ch], o.perSession, tallies[ch]);
    }
  } finally {
    for (const m of Object.values(managers)) {
      await m.reap({ liveSessions: new Set() });
      await m.close();
    }
  }
  return judge(tallies, o);
}

function judge(t: Record<Channel, Tally>, o: { sessions: number; perSession: number; rounds: number }): { text: string; met: boolean } {
  const line = (ch: Channel) => {
    const x = t[ch];
    const lat = [...x.lat].sort((a, b) => a - b);
    return { ch, p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length, rate: (x.cmds * 1000) / x.wallMs, proc: x.procUs / 1000 / x.cmds, machine: x.machineMs / x.cmds, docker: x.dockerMs / x.cmds, containers: x.containerMs / x.cmds };
  };
  const s = line('socket');
  const a = line('attach');
  const rows = [s, a].map((r) =>
    `| ${r.ch === 'socket' ? 'control socket (now)' : 'attach stream (before)'} | ${r.n} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.rate.toFixed(0)} | ${r.proc.toFixed(3)} | ${r.docker.toFixed(3)} | ${r.containers.toFixed(3)} | ${r.machine.toFixed(3)} |`);
  // The socket must not lose to the stream it replaces on any figure; the whole machine's CPU is the figure it exists for.
  const met = s.p50 <= a.p50 && s.machine < a.machine && s.rate >= a.rate;
  const text = [
    `1 KiB writes; latency one at a time; load: ${o.sessions} sessions writing at once, ${o.perSession} each, ${o.rounds} alternating rounds`,
    '',
    '| channel | n (latency) | p50 ms | p99 ms | writes/s under load | CPU ms/write: this process | dockerd, containerd, shims | the containers (executors) | whole machine |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `socket/attach: p50 ×${(s.p50 / a.p50).toFixed(2)}, throughput ×${(s.rate / a.rate).toFixed(2)}, process CPU ×${(s.proc / a.proc).toFixed(2)}, machine CPU ×${(s.machine / a.machine).toFixed(2)}`,
    `target (the socket no slower and cheaper for the machine than the attach stream): ${met ? 'met' : 'NOT met'}`,
  ].join('\n');
  return { text, met };
}
