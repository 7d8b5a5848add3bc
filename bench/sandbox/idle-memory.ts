// What an idle session costs the host, in the three states it passes
// through (issue 23): its container running, paused (THINKFLOW_IDLE_PAUSE_S),
// and stopped (THINKFLOW_SANDBOX_IDLE_STOP_S: container removed, workspace
// image detached and kept). Measured as the drop in the host's MemAvailable
// divided by the sessions, in one run: N sessions each opened with one
// command (measured at once), left idle for `--idle-s` (default: the idle pause's
// default, THINKFLOW_IDLE_PAUSE_S, after which the idle sweep pauses a session;
// the executor's heap shrinks meanwhile, V8's memory reducer), measured again,
// then all paused, then all stopped. `--idle-s 0` pauses right after the commands
// (as an approval wait may). The manager runs in this process, so its own memory
// per session is in the figure.
//   npm run bench:idle-memory [-- --sessions 40 --idle-s 30]
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ENV_DEFAULTS } from '../../services/config/index.ts';
import { SandboxManager } from '../../services/sandbox/index.ts';

const { values } = parseArgs({ options: { sessions: { type: 'string', default: '40' }, 'idle-s': { type: 'string', default: String(ENV_DEFAULTS.THINKFLOW_IDLE_PAUSE_S) } } });
const N = Number(values.sessions);
const IDLE_S = Number(values['idle-s']);
const PAUSED_TARGET_MIB = 12;
const STOPPED_TARGET_MIB = 1;

const memAvailableMiB = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) / 1024;

/** The median of 7 reads over ~3 s, after the state settled: one read jumps with whatever else the machine does. */
async function settled(): Promise<number> {
  await new Promise((r) => setTimeout(r, 2000));
  const reads: number[] = [];
  for (let i = 0; i < 7; i++) {
    reads.push(memAvailableMiB());
    await new Promise((r) => setTimeout(r, 400));
  }
  return reads.sort((a, b) => a - b)[3]!;
}

async function main(): Promise<void> {
  const prefix = `tfbench-mem-${randomBytes(3).toString('hex')}-`;
  // Pausing only when asked (no sweep), never reaped meanwhile.
  const m = new SandboxManager({ namePrefix: prefix, reapIntervalMs: 0, workspaceSpares: 0, idlePauseMs: 3_600_000, ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { image: process.env.THINKFLOW_SANDBOX_IMAGE } : {}) });
  const sids = Array.from({ length: N }, (_, i) => `ses_mem${i}${randomBytes(4).toString('hex')}`);
  console.log(`idle-memory bench: ${new Date().toISOString()}, ${N} sessions, MemAvailable ${memAvailableMiB().toFixed(0)} MiB`);
  try {
    const base = await settled();
    for (const sid of sids) {
      const r = await (await m.sandboxFor(sid)).execute({ id: '1', tool: 'write', path: 'a.txt', content: 'x'.repeat(1024), need_result: false });
      if (!r.ok) throw new Error(`write in ${sid}: ${r.error}`);
    }
    const lastCommandAt = Date.now();
    const running = (base - (await settled())) / N;
    // Every session idle for IDLE_S, as the idle sweep would find it before pausing it.
    await new Promise((r) => setTimeout(r, Math.max(0, lastCommandAt + IDLE_S * 1000 - Date.now())));
    const idle = (base - (await settled())) / N;
    for (const sid of sids) if (!(await m.pause(sid))) throw new Error(`${sid} was not paused`);
    const paused = (base - (await settled())) / N;
    for (const sid of sids) await m.stop(sid);
    const stopped = (base - (await settled())) / N;
    // The files are still there after all three: one session read back.
    const back = await (await m.sandboxFor(sids[0]!)).execute({ id: '2', tool: 'read', path: 'a.txt', need_result: true });
    if (back.stdout !== 'x'.repeat(1024)) throw new Error('a stopped session lost its file');
    console.log(`memory per idle session (MemAvailable drop / ${N}): running ${running.toFixed(1)} MiB, running idle ${IDLE_S} s ${idle.toFixed(1)} MiB, then paused ${paused.toFixed(1)} MiB, stopped ${stopped.toFixed(2)} MiB`);
    console.log(`${paused <= PAUSED_TARGET_MIB ? 'met' : 'NOT MET'}: paused (after ${IDLE_S} s idle) ≤ ${PAUSED_TARGET_MIB} MiB per session (${paused.toFixed(1)})`);
    console.log(`${stopped <= STOPPED_TARGET_MIB ? 'met' : 'NOT MET'}: stopped ≤ ${STOPPED_TARGET_MIB} MiB per session (${stopped.toFixed(2)})`);
  } finally {
    for (const sid of sids) await m.remove(sid).catch((err: unknown) => console.error(`remove ${sid}: ${String(err)}`));
    await m.close();
  }
}

await main();
