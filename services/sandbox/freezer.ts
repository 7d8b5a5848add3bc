import { constants } from 'node:fs';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';

// A container's cgroup freezer, written directly. `docker pause` and
// `docker unpause` do the same thing through dockerd, containerd's shim and a
// runc process: 16–37 ms each on the bench machine, nearly all of it process
// starts, where the write itself takes microseconds. A frozen container's
// next command waits for that thaw, so the idle pause costs what the thaw
// costs (issue 23: ≤ 15 ms).
//
// Docker is not told: its paused flag stays false. That is safe because runc
// reads the freezer itself, not dockerd's flag, wherever it matters: `exec`
// into a frozen container is refused ("cannot exec in a paused container"),
// and a SIGKILL (`rm -f`, `stop` after its grace time) thaws the cgroup first
// (runc 1.1), so nothing hangs on a container frozen this way. What Docker
// cannot see, every reader here checks (`frozenHow`): the reaper's probe, the
// opener of a container another process froze, the workspace's `docker exec`.
//
// Only where this process sees the container's cgroup (a local engine, the
// host's /proc and a writable /sys/fs/cgroup); elsewhere (a remote
// DOCKER_HOST, a worker in a container of its own) `docker pause` stays.

/** A container's freezer control file, as this process reaches it. */
export type FreezerFile = { path: string; version: 1 | 2 };

/** Where the cgroup hierarchies and process entries are; tests point them at a directory of their own. */
export type FreezerRoots = { cgroup: string; proc: string };
const HOST: FreezerRoots = { cgroup: '/sys/fs/cgroup', proc: '/proc' };

/**
 * The freezer file of the container `containerId` whose init is `pid` on
 * this host, or undefined when this process cannot write it. The pid's own
 * cgroup must name the container's id: a pid of another pid namespace, or
 * one reused after the container died, never leads to another cgroup.
 */
export async function freezerFileOf(containerId: string, pid: number, roots: FreezerRoots = HOST): Promise<FreezerFile | undefined> {
  if (!/^[0-9a-f]{64}$/.test(containerId) || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const lines = await readFile(join(roots.proc, String(pid), 'cgroup'), 'utf8').catch(() => '');
  const candidate = freezerCandidate(lines, roots.cgroup, await unified(roots.cgroup));
  if (!candidate || !candidate.path.includes(containerId)) return undefined;
  return (await writable(candidate.path)) ? candidate : undefined;
}

/** v1: the `freezer` controller's line; v2 (unified only): the `0::` line. Hybrid hosts freeze through v1, as runc does. */
function freezerCandidate(procCgroup: string, cgroupRoot: string, isUnified: boolean): FreezerFile | undefined {
  for (const line of procCgroup.split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(\/.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    if (!isUnified && controllers!.split(',').includes('freezer')) return inside(join(cgroupRoot, 'freezer'), path, 'freezer.state', 1);
    if (isUnified && controllers === '') return inside(cgroupRoot, path, 'cgroup.freeze', 2);
  }
  return undefined;
}

function inside(base: string, cgroupPath: string, file: string, version: 1 | 2): FreezerFile | undefined {
  const path = resolve(base, `.${cgroupPath}`, file);
  return path.startsWith(base + sep) ? { path, version } : undefined;
}

const unified = (cgroupRoot: string) => access(join(cgroupRoot, 'cgroup.controllers')).then(() => true, () => false);
const writable = (path: string) => access(path, constants.W_OK).then(() => true, () => false);

/** Freezes (true) or thaws (false) the cgroup; throws when the file is gone (the container with it). */
export async function setFrozen(f: FreezerFile, frozen: boolean): Promise<void> {
  const value = f.version === 1 ? (frozen ? 'FROZEN' : 'THAWED') : frozen ? '1' : '0';
  await writeFile(f.path, value, { flag: 'r+' });
}

/** True while the cgroup is frozen or freezing (v1 FROZEN/FREEZING, v2 cgroup.freeze 1). */
export async function isFrozen(f: FreezerFile): Promise<boolean> {
  const state = (await readFile(f.path, 'utf8')).trim();
  return f.version === 1 ? state !== 'THAWED' : state === '1';
}
