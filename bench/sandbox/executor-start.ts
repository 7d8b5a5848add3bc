// What a container start waits for in the executor, bundled into one module
// (sandbox-image/build.sh, the shipped image) against run from its 30 source
// files (the baseline: the same image built with THINKFLOW_SANDBOX_BUNDLE=0),
// in the same run, alternating:
//  * the executor's own start: process start → its `ready` line, read from
//    inside the container (Node's uptime), so Docker's noise stays out;
//  * a stopped session's next command (SandboxManager.stop, then a 1 KiB
//    read: the volume attached again, the container made and started, the
//    executor ready, the command answered): issue 23's recreation, ≤ 250 ms.
//   npm run bench:executor-start [-- --samples 10]
import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SandboxManager, type Sandbox } from '../../services/sandbox/index.ts';
import { percentile } from './stats.ts';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '10' } } });
const N = Number(values.samples);
const BUNDLED = process.env.THINKFLOW_SANDBOX_IMAGE ?? 'thinkflow/sandbox:latest';
const SOURCES = 'thinkflow/sandbox:sources';
const ROOT = new URL('../../', import.meta.url).pathname;
const docker = new Docker();
const RECREATION_TARGET_MS = 250;

// Node's uptime when the executor writes its `ready` line (the wrapper exits there).
const READY_PROBE = `const w = process.stdout.write.bind(process.stdout);
process.stdout.write = (s, ...a) => { if (String(s).includes('"ready"')) { w('READY ' + (process.uptime() * 1000).toFixed(1) + '\\n'); process.exit(0); } return w(s, ...a); };
import('/opt/thinkflow/executor/main.mjs');`;

function readyMs(image: string): number {
  const out = execFileSync('docker', ['run', '--rm', '--network', 'none', '--cpus', '1', '--entrypoint', 'node', image, '--input-type=module', '-e', READY_PROBE], { encoding: 'utf8' });
  const m = /READY ([\d.]+)/.exec(out);
  if (!m) throw new Error(`${image}: no ready line in ${JSON.stringify(out.slice(0, 200))}`);
  return Number(m[1]);
}

async function recreation(m: SandboxManager, sid: string, sb: Sandbox): Promise<number> {
  await m.stop(sid);
  const t0 = performance.now();
  const r = await sb.execute({ id: 'r', need_result: false, tool: 'read', path: 'k.txt' });
  if (!r.ok) throw new Error(`read after a stop failed: ${r.error}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  // The baseline image: the same sources, not bundled (build.sh is idempotent per inputs).
  execFileSync('bash', ['sandbox-image/build.sh'], { cwd: ROOT, env: { ...process.env, THINKFLOW_SANDBOX_IMAGE: SOURCES, THINKFLOW_SANDBOX_BUNDLE: '0' }, stdio: 'inherit' });
  const images = [BUNDLED, SOURCES];
  const ready: number[][] = [[], []];
  const recreate: number[][] = [[], []];
  const prefix = `tfbes-${randomBytes(3).toString('hex')}-`;
  const managers = images.map((image) => new SandboxManager({ docker, image, namePrefix: prefix, reapIntervalMs: 0, workspaceSpares: 0, idlePauseMs: 0 }));
  try {
    const sids = images.map(() => `ses_start${randomBytes(5).toString('hex')}`);
    const sbs = await Promise.all(managers.map((m, i) => m.sandboxFor(sids[i]!)));
    for (const sb of sbs) await sb.execute({ id: 'w', need_result: false, tool: 'write', path: 'k.txt', content: 'k'.repeat(1024) });
    for (let k = 0; k < N; k++) {
      for (let i = 0; i < images.length; i++) {
        ready[i]!.push(readyMs(images[i]!));
        recreate[i]!.push(await recreation(managers[i]!, sids[i]!, sbs[i]!));
      }
    }
  } finally {
    await managers[0]!.reap({ liveSessions: new Set() });
    for (const m of managers) await m.close();
  }
  const q = (xs: number[], p: number) => percentile([...xs].sort((a, b) => a - b), p).toFixed(1);
  const os = await import('node:os');
  console.log(`executor-start bench: ${new Date().toISOString()}, load ${os.loadavg()[0]!.toFixed(1)}, n = ${N} each, alternating`);
  console.log('| | bundled (shipped) p50 / p95 ms | sources (before) p50 / p95 ms |\n|---|---:|---:|');
  console.log(`| process start → executor ready (inside the container) | ${q(ready[0]!, 50)} / ${q(ready[0]!, 95)} | ${q(ready[1]!, 50)} / ${q(ready[1]!, 95)} |`);
  console.log(`| a stopped session's next command (1 KiB read, recreation) | ${q(recreate[0]!, 50)} / ${q(recreate[0]!, 95)} | ${q(recreate[1]!, 50)} / ${q(recreate[1]!, 95)} |`);
  const faster = percentile([...ready[0]!].sort((a, b) => a - b), 50) < percentile([...ready[1]!].sort((a, b) => a - b), 50);
  const met = percentile([...recreate[0]!].sort((a, b) => a - b), 50) <= RECREATION_TARGET_MS;
  console.log(`${faster ? 'met' : 'NOT MET'}: the bundled executor is ready sooner than from its sources`);
  console.log(`${met ? 'met' : 'NOT MET'}: recreation after an idle stop ≤ ${RECREATION_TARGET_MS} ms at p50`);
  if (!faster || !met) process.exitCode = 1;
}

await main();
