// What a container start waits for in the executor, as shipped (sandbox-image/build.sh: one bundled module, run by
// the build machine's Node.js 20) against a baseline image built from the same sources in the same run,
// alternating (`--baseline`):
//  * `debian-node` (default): the same bundle run by Debian's Node 18 (THINKFLOW_SANDBOX_NODE=debian);
//  * `sources`: the executor's 30 source files unbundled (THINKFLOW_SANDBOX_BUNDLE=0).
// Measured:
//  * the executor's own start: process start → its `ready` line, read from
//    inside the container (Node's uptime), so Docker's noise stays out;
//  * a bare start of the runtime from outside: `docker exec … node -e 0` in a running container, to its exit (as the
//    workspace programs are started; this also counts the binary's loading, before Node's own clock starts);
//  * a stopped session's next command (SandboxManager.stop, then a 1 KiB
//    read: the volume attached again, the container made and started, the
//    executor ready, the command answered): issue 23's recreation, ≤ 250 ms.
//   npm run bench:executor-start [-- --samples 10 --baseline debian-node|sources]
import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SandboxManager, type Sandbox } from '../../services/sandbox/index.ts';
import { percentile } from './stats.ts';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '10' }, baseline: { type: 'string', default: 'debian-node' } } });
const N = Number(values.samples);
const SHIPPED = process.env.THINKFLOW_SANDBOX_IMAGE ?? 'thinkflow/sandbox:latest';
const BASELINES: Record<string, { image: string; env: Record<string, string>; label: string }> = {
  'debian-node': { image: 'thinkflow/sandbox:debian-node', env: { THINKFLOW_SANDBOX_NODE: 'debian' }, label: "Debian's Node 18" },
  sources: { image: 'thinkflow/sandbox:sources', env: { THINKFLOW_SANDBOX_BUNDLE: '0' }, label: 'sources, not bundled' },
};
const picked = BASELINES[values.baseline!];
if (!picked) throw new Error(`--baseline: one of ${Object.keys(BASELINES).join(', ')}`);
const BASELINE = picked;
const RUNTIME = '/opt/thinkflow/runtime/node';
const ROOT = new URL('../../', import.meta.url).pathname;
const docker = new Docker();
const RECREATION_TARGET_MS = 250;

// Node's uptime when the executor writes its `ready` line (the wrapper exits there).
const READY_PROBE = `const w = process.stdout.write.bind(process.stdout);
process.stdout.write = (s, ...a) => { if (String(s).includes('"ready"')) { w('READY ' + (process.uptime() * 1000).toFixed(1) + '\\n'); process.exit(0); } return w(s, ...a); };
import('/opt/thinkflow/executor/main.mjs');`;

function readyMs(image: string): number {
  const out = execFileSync('docker', ['run', '--rm', '--network', 'none', '--cpus', '1', '--entrypoint', RUNTIME, image, '--input-type=module', '-e', READY_PROBE], { encoding: 'utf8' });
  const m = /READY ([\d.]+)/.exec(out);
  if (!m) throw new Error(`${image}: no ready line in ${JSON.stringify(out.slice(0, 200))}`);
  return Number(m[1]);
}

/** ms from `docker exec` of the runtime (`node -e 0`) in a running container to its exit, as the workspace programs start. */
function execStartMs(container: string): number {
  const t0 = performance.now();
  execFileSync('docker', ['exec', container, RUNTIME, '-e', '0']);
  return performance.now() - t0;
}

async function recreation(m: SandboxManager, sid: string, sb: Sandbox): Promise<number> {
  await m.stop(sid);
  const t0 = performance.now();
  const r = await sb.execute({ id: 'r', need_result: false, tool: 'read', path: 'k.txt' });
  if (!r.ok) throw new Error(`read after a stop failed: ${r.error}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  // The baseline image: the same sources, built the baseline's way (build.sh is idempotent per inputs).
  execFileSync('bash', ['sandbox-image/build.sh'], { cwd: ROOT, env: { ...process.env, THINKFLOW_SANDBOX_IMAGE: BASELINE.image, ...BASELINE.env }, stdio: 'inherit' });
  const images = [SHIPPED, BASELINE.image];
  const ready: number[][] = [[], []];
  const bare: number[][] = [[], []];
  const recreate: number[][] = [[], []];
  const prefix = `tfbes-${randomBytes(3).toString('hex')}-`;
  const managers = images.map((image) => new SandboxManager({ docker, image, namePrefix: prefix, reapIntervalMs: 0, workspaceSpares: 0, idlePauseMs: 0 }));
  const idle = images.map((image, i) => `${prefix}exec-${i}`);
  try {
    images.forEach((image, i) => execFileSync('docker', ['run', '-d', '--rm', '--name', idle[i]!, '--network', 'none', '--entrypoint', 'sleep', image, '600']));
    const sids = images.map(() => `ses_start${randomBytes(5).toString('hex')}`);
    const sbs = await Promise.all(managers.map((m, i) => m.sandboxFor(sids[i]!)));
    for (const sb of sbs) await sb.execute({ id: 'w', need_result: false, tool: 'write', path: 'k.txt', content: 'k'.repeat(1024) });
    for (let k = 0; k < N; k++) {
      for (let j = 0; j < images.length; j++) {
        const i = k % 2 === 0 ? j : images.length - 1 - j; // alternating which goes first
        ready[i]!.push(readyMs(images[i]!));
        bare[i]!.push(execStartMs(idle[i]!));
        recreate[i]!.push(await recreation(managers[i]!, sids[i]!, sbs[i]!));
      }
    }
  } finally {
    execFileSync('docker', ['rm', '-f', ...idle], { stdio: 'ignore' });
    await managers[0]!.reap({ liveSessions: new Set() });
    for (const m of managers) await m.close();
  }
  const p50 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
  const q = (xs: number[], p: number) => percentile([...xs].sort((a, b) => a - b), p).toFixed(1);
  const cells = (xs: number[][]) => `${q(xs[0]!, 50)} / ${q(xs[0]!, 95)} | ${q(xs[1]!, 50)} / ${q(xs[1]!, 95)} | ${(p50(xs[0]!) / p50(xs[1]!)).toFixed(2)}`;
  const os = await import('node:os');
  console.log(`executor-start bench: ${new Date().toISOString()}, load ${os.loadavg()[0]!.toFixed(1)}, n = ${N} each, alternating`);
  console.log(`| | shipped (${SHIPPED}) p50 / p95 ms | baseline: ${BASELINE.label} p50 / p95 ms | p50 ratio |\n|---|---:|---:|---:|`);
  console.log(`| process start → executor ready (inside the container) | ${cells(ready)} |`);
  console.log(`| \`docker exec\` of the runtime, \`node -e 0\`, to its exit | ${cells(bare)} |`);
  console.log(`| a stopped session's next command (1 KiB read, recreation) | ${cells(recreate)} |`);
  const faster = p50(ready[0]!) < p50(ready[1]!);
  const met = p50(recreate[0]!) <= RECREATION_TARGET_MS;
  console.log(`${faster ? 'met' : 'NOT MET'}: the shipped executor is ready sooner than the baseline's`);
  console.log(`${met ? 'met' : 'NOT MET'}: recreation after an idle stop ≤ ${RECREATION_TARGET_MS} ms at p50`);
  if (!faster || !met) process.exitCode = 1;
}

await main();
