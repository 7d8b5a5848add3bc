// Reads the container's limits from inside, on cgroup v1 (this machine) or v2.
// Prints `pids_max mem_bytes swap_bytes cpu_millis pids_current`, where swap is what
// the container may use beyond its memory (0 = no swap).
export const CGROUP_LIMITS = `
if [ -d /sys/fs/cgroup/pids ]; then
  c=/sys/fs/cgroup
  mem=$(cat $c/memory/memory.limit_in_bytes)
  echo "$(cat $c/pids/pids.max) $mem $(( $(cat $c/memory/memory.memsw.limit_in_bytes) - mem ))" \\
    "$(( $(cat $c/cpu/cpu.cfs_quota_us) * 1000 / $(cat $c/cpu/cpu.cfs_period_us) ))" "$(cat $c/pids/pids.current)"
else
  c=/sys/fs/cgroup
  read -r quota period < $c/cpu.max
  echo "$(cat $c/pids.max) $(cat $c/memory.max) $(cat $c/memory.swap.max)" \\
    "$(( quota * 1000 / period ))" "$(cat $c/pids.current)"
fi`;

export function parseLimits(stdout: string): { pidsMax: number; memBytes: number; swapBytes: number; cpuMillis: number; pidsCurrent: number } {
  const [pidsMax, memBytes, swapBytes, cpuMillis, pidsCurrent] = stdout.trim().split(/\s+/).map(Number);
  return { pidsMax: pidsMax!, memBytes: memBytes!, swapBytes: swapBytes!, cpuMillis: cpuMillis!, pidsCurrent: pidsCurrent! };
}
