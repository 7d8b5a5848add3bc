// npm run bench:sandbox — latency of the in-container executor next to plain
// `docker exec` doing the same work, plus container cold start.
// `--update-results` also writes the `## Sandbox` section of bench/RESULTS.md;
// `--workspace-fs-only` runs only the per-session filesystem rows (with
// `--update-results`, writing only their section); `--channels-only` runs only
// the executor channel rows (control socket vs attach stream, channels.ts);
// `--idle-pause-only` runs only the next command after an idle pause
// against one on a running container (idle-pause.ts).
import Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { loadConfig } from '../../services/config/index.ts';
import type { Command } from '../../services/protocol/index.ts';
import { containerName, SandboxManager } from '../../services/sandbox/index.ts';
import { updateResults, WORKSPACE_FS_HEADING } from './results.ts';
import { formatTable, measure, row, type Row } from './stats.ts';
import { ADDED_P50_TARGET_MS, benchWorkspaceFs } from './workspace-fs.ts';
import { benchEgress, EGRESS_HEADING } from './egress.ts';
import { benchChannels, CHANNELS_HEADING } from './channels.ts';
import { ADDED_TARGET_MS, benchIdlePause, IDLE_PAUSE_HEADING } from './idle-pause.ts';

const N = Number(process.env.BENCH_N ?? 300);
const COLD_N = Number(process.env.BENCH_COLD_N ?? 15);
const CLI_N = Number(process.env.BENCH_CLI_N ?? 40);
const FS_N = Number(process.env.BENCH_FS_N ?? 60);
const FS_ONLY = process.argv.includes('--workspace-fs-only');
const EGRESS_ONLY = process.argv.includes('--egress-only');
const EGRESS_N = Number(process.env.BENCH_EGRESS_N ?? 300);
const CHANNELS_ONLY = process.argv.includes('--channels-only');
const PAUSE_ONLY = process.argv.includes('--idle-pause-only');
const PAUSE_N = Number(process.env.BENCH_PAUSE_N ?? 30);
const docker = new Docker();
const prefix = `tfbench-${randomBytes(3).toString('hex')}-`;
// The image as the service would pick it (THINKFLOW_SANDBOX_IMAGE through the env schema).
const image = loadConfig().sandboxImage;
const manager = new SandboxManager({ docker, namePrefix: prefix, reapIntervalMs: 0, image });
// The same executor with commands run as root and no separation: the bash
// path before commands got their own uid (no setpriv, no leftover-process
// sweep), measured in the same run so the cost of the isolation is a
// difference. (File tools take the same path either way.)
const unisolated = new SandboxManager({ docker, namePrefix: `${prefix}root-`, reapIntervalMs: 0, user: '0:0', image });
const run = promisify(execFile);
const KiB = 'x'.repeat(1023) + '\n';

/** One `docker exec` through the Engine API: create, start attached, wait for the end, read the exit code. */
async function apiExec(container: Docker.Container, cmd: string[]): Promise<string> {
  // As the command user, like the executor's commands (the container's own user is the executor's root).
  const exec = await container.exec({ Cmd: cmd, User: '1000:1000', AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  docker.modem.demuxStream(stream, out, new PassThrough());
  await new Promise((resolve) => stream.on('end', resolve));
  const { ExitCode } = await exec.inspect();
  if (ExitCode !== 0) throw new Error(`${cmd.join(' ')} exited ${ExitCode}`);
  return Buffer.concat(chunks).toString();
}

async function engineVersion(): Promise<string> {
  return (await run('docker', ['version', '-f', '{{.Server.Version}}'])).stdout.trim();
}

function machine(engine: string): string {
  return `machine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}, ` +
    `Docker ${engine}; load average at the end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (the machine is shared)`;
}

/** A session's bash, for the egress rows: the command's stdout, or an error with its output. */
function bashIn(m: SandboxManager) {
  return async (sid: string) => {
    const sb = await m.sandboxFor(sid);
    return async (cmd: string, timeoutS: number) => {
      const r = await sb.execute({ id: 'egress', tool: 'bash', cmd, timeout: timeoutS, need_result: true });
      if (!r.ok) throw new Error(`egress bench command failed: ${r.error ?? ''} ${r.stdout ?? ''} ${r.stderr ?? ''}`);
      return r.stdout ?? '';
    };
  };
}

async function egressRows(): Promise<string> {
  const text = `${machine(await engineVersion())}\n\n${await benchEgress(manager, bashIn(manager), EGRESS_N)}`;
  console.log(text);
  if (process.argv.includes('--update-results')) {
    await updateResults(`npm run bench:sandbox -- ${EGRESS_ONLY ? '--egress-only ' : ''}--update-results`, text, EGRESS_HEADING);
  }
  if (/NOT met/.test(text)) process.exitCode = 1;
  return text;
}

async function channelRows(): Promise<boolean> {
  const ch = await benchChannels(docker, { image, n: N, sessions: Number(process.env.BENCH_CHANNEL_SESSIONS ?? 20), perSession: 25, rounds: 6 });
  const text = `${machine(await engineVersion())}\n\n${ch.text}`;
  console.log(text);
  if (process.argv.includes('--update-results')) await updateResults(`npm run bench:sandbox -- ${CHANNELS_ONLY ? '--channels-only ' : ''}--update-results`, text, CHANNELS_HEADING);
  return ch.met;
}

async function idlePauseRows(): Promise<{ met: boolean; addedP50: number }> {
  const r = await benchIdlePause(docker, { image, n: PAUSE_N });
  const text = `${machine(await engineVersion())}; n=${PAUSE_N} per row, sequential, running and paused samples alternating\n\n${r.text}`;
  console.log(text);
  if (process.argv.includes('--update-results')) await updateResults(`npm run bench:sandbox -- ${PAUSE_ONLY ? '--idle-pause-only ' : ''}--update-results`, text, IDLE_PAUSE_HEADING);
  return r;
}

async function main(): Promise<void> {
  if (PAUSE_ONLY) {
    if (!(await idlePauseRows()).met) process.exitCode = 1;
    return;
  }
  if (CHANNELS_ONLY) {
    if (!(await channelRows())) process.exitCode = 1;
    return;
  }
  if (EGRESS_ONLY) {
    try {
      await egressRows();
    const channelsMet = await channelRows();
    } finally {
      await manager.reap({ liveSessions: new Set() });
      await manager.close();
    }
    return;
  }
  if (FS_ONLY) {
    const fs = await benchWorkspaceFs(docker, { prefix, image, n: FS_N, warmup: 3, splitN: Math.min(FS_N, 20) });
    const text = `${machine(await engineVersion())}\n\n\`\`\`\n${fs.text}\n\`\`\``;
    console.log(text);
    if (process.argv.includes('--update-results')) await updateResults('npm run bench:sandbox -- --workspace-fs-only --update-results', text, WORKSPACE_FS_HEADING);
    if (!fs.met) process.exitCode = 1;
    return;
  }
  try {
    await manager.start();
    const rows: Row[] = [];
    let seq = 0;
    const c = (p: Omit<Command, 'id' | 'need_result'>): Command => ({ id: String(++seq), need_result: false, ...p });

    const cold = await measure(COLD_N, 1, async () => {
      await manager.sandboxFor(`ses_cold${randomBytes(5).toString('hex')}`);
    });
    rows.push(row('container cold start (volume + create + start + executor ready)', 'SandboxManager.sandboxFor', cold, 500));
    await manager.reap({ liveSessions: new Set() });

    const sid = `ses_bench${randomBytes(5).toString('hex')}`;
    const sb = await manager.sandboxFor(sid);
    const must = async (cmd: Command) => {
      const r = await sb.execute(cmd);
      if (!r.ok) throw new Error(`${cmd.tool} failed: ${r.error}`);
    };
    rows.push(row('write 1 KiB', 'executor', await measure(N, 20, () => must(c({ tool: 'write', path: 'bench/w.txt', content: KiB }))), 5));
    rows.push(row('read 1 KiB', 'executor', await measure(N, 20, () => must(c({ tool: 'read', path: 'bench/w.txt' }))), 5));
    rows.push(row('bash true', 'executor, isolated (uid 1000, no caps, leftovers swept)', await measure(N, 10, () => must(c({ tool: 'bash', cmd: 'true' }))), 25));
    const plain = await unisolated.sandboxFor(`ses_root${randomBytes(5).toString('hex')}`);
    const mustPlain = async (cmd: Command) => {
      const r = await plain.execute(cmd);
      if (!r.ok) throw new Error(`${cmd.tool} failed: ${r.error}`);
    };
    rows.push(row('bash true', 'executor, not isolated (before)', await measure(N, 10, () => mustPlain(c({ tool: 'bash', cmd: 'true' })))));

    const container = docker.getContainer(containerName(prefix, sid));
    const writeCmd = ['sh', '-c', 'printf %s "$1" > /workspace/bench/e.txt', 'sh', KiB];
    rows.push(row('write 1 KiB', 'docker exec (Engine API)', await measure(N, 10, () => apiExec(container, writeCmd))));
    rows.push(row('read 1 KiB', 'docker exec (Engine API)', await measure(N, 10, () => apiExec(container, ['cat', '/workspace/bench/e.txt']))));
    rows.push(row('bash true', 'docker exec (Engine API)', await measure(N, 10, () => apiExec(container, ['bash', '--noprofile', '--norc', '-c', 'true']))));
    const name = containerName(prefix, sid);
    rows.push(row('write 1 KiB', 'docker exec (CLI)', await measure(CLI_N, 3, () => run('docker', ['exec', '-u', '1000:1000', name, ...writeCmd]))));
    rows.push(row('read 1 KiB', 'docker exec (CLI)', await measure(CLI_N, 3, () => run('docker', ['exec', '-u', '1000:1000', name, 'cat', '/workspace/bench/e.txt']))));
    rows.push(row('bash true', 'docker exec (CLI)', await measure(CLI_N, 3, () => run('docker', ['exec', '-u', '1000:1000', name, 'bash', '--noprofile', '--norc', '-c', 'true']))));

    const fs = await benchWorkspaceFs(docker, { prefix, image, n: FS_N, warmup: 3, splitN: Math.min(FS_N, 20) });
    await egressRows();
    const channelsMet = await channelRows();
    const pause = await idlePauseRows();

    const header = `${machine(await engineVersion())}; n=${N} per row (CLI ${CLI_N}, cold start ${COLD_N}), sequential, after warm-up`;
    const output = `${header}\n\n${formatTable(rows)}`;
    console.log(`${output}\n\n${fs.text}`);
    if (process.argv.includes('--update-results')) {
      await updateResults('npm run bench:sandbox -- --update-results', output);
      await updateResults('npm run bench:sandbox -- --update-results', `${header}\n\n\`\`\`\n${fs.text}\n\`\`\``, WORKSPACE_FS_HEADING);
    }
    const missed = rows.filter((r) => r.target !== undefined && r.p50 > r.target).map((r) => `${r.name} via ${r.via}`);
    if (!channelsMet) missed.push('the executor control socket against the attach stream');
    if (!pause.met) missed.push(`the next command after an idle pause: +${pause.addedP50.toFixed(2)} ms at p50 (target ≤ ${ADDED_TARGET_MS})`);
    if (!fs.met) missed.push(`session creation with a per-session filesystem: +${fs.addedP50.toFixed(2)} ms at p50 (target ≤ ${ADDED_P50_TARGET_MS})`);
    if (missed.length) {
      console.error(`missed targets: ${missed.join('; ')}`);
      process.exitCode = 1;
    }
  } finally {
    for (const m of [manager, unisolated]) {
      await m.reap({ liveSessions: new Set() });
      await m.close();
    }
  }
}

await main();
