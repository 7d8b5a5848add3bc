// Where a machine's CPU went during a benchmark's window, read from /proc and
// the cgroups: the whole machine, processes by name (dockerd, redis-server…),
// one process, and Docker containers. Every figure is CPU milliseconds so far;
// a bench takes two snapshots and divides the difference by its commands.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const HZ = 100; // USER_HZ on Linux

/** Busy CPU ms of the whole machine so far (user..steal, not idle or iowait). */
export function machineMs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3]! + cpu[4]!;
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0); // guest is counted in user already
  return ((total - idle) * 1000) / HZ;
}

function statFields(pid: string | number): { comm: string; ticks: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(f[11]) + Number(f[12]) }; // utime + stime
  } catch {
    return null; // gone meanwhile
  }
}

/** CPU ms so far of one process (its threads included), 0 once it is gone. */
export function processMs(pid: number): number {
  return ((statFields(pid)?.ticks ?? 0) * 1000) / HZ;
}

/** CPU ms so far of every process whose name is in `comms`. */
export function commsMs(comms: ReadonlySet<string>): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const s = statFields(pid);
    if (s && comms.has(s.comm)) ticks += s.ticks;
  }
  return (ticks * 1000) / HZ;
}

export const DOCKER_COMMS: ReadonlySet<string> = new Set(['dockerd', 'containerd', 'containerd-shim', 'containerd-shim-runc-v2', 'docker-proxy']);
export const REDIS_COMMS: ReadonlySet<string> = new Set(['redis-server']);

/** CPU ms so far of the given containers (cgroup v1 cpuacct, or v2 cpu.stat): the executors and their commands. */
export function containersMs(ids: readonly string[]): number {
  let ns = 0;
  for (const id of ids) {
    for (const [file, parse] of [
      [`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, (t: string) => Number(t)],
      [`/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`, (t: string) => Number(/usage_usec (\d+)/.exec(t)?.[1] ?? 0) * 1000],
    ] as const) {
      if (existsSync(file)) {
        ns += parse(readFileSync(file, 'utf8'));
        break;
      }
    }
  }
  return ns / 1e6;
}
