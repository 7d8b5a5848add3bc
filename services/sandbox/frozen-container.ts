import type Docker from 'dockerode';
import { freezerFileOf, isFrozen, setFrozen, type FreezerFile } from './freezer.ts';
import { sandboxLog } from './log.ts';

// Freezing and thawing a session's container, either way: its cgroup
// freezer written directly (freezer.ts: microseconds, where this process
// reaches the cgroup) or `docker pause` (tens of ms; a remote engine, or
// THINKFLOW_PAUSE_WITH=docker). A container is thawed the way it was frozen:
// one frozen through Docker and thawed through its cgroup would keep Docker's
// paused flag, and dockerd would refuse its `exec` and its next pause.

/** How the idle pause freezes: `auto` = the cgroup where this process reaches it, Docker elsewhere. */
export type PauseWith = 'auto' | 'docker';

/** How a container was frozen, so that it is thawed the same way. */
export type Freeze = { by: 'docker' } | { by: 'cgroup'; file: FreezerFile };

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Freezes the container. With `auto` and a running container whose cgroup
 * this process reaches, by its freezer; otherwise (or already paused by
 * Docker, which only Docker then thaws) by `docker pause`, whose errors are
 * the caller's (409 "already paused").
 */
export async function freezeContainer(docker: Docker, name: string, pauseWith: PauseWith): Promise<Freeze> {
  const c = docker.getContainer(name);
  if (pauseWith === 'auto') {
    const info = await c.inspect();
    const file = info.State.Running && !info.State.Paused ? await freezerFileOf(info.Id, info.State.Pid) : undefined;
    if (file) {
      await setFrozen(file, true);
      return { by: 'cgroup', file };
    }
  }
  try {
    await c.pause();
  } catch (err) {
    // runc refuses to pause what another process froze through its cgroup ("container not running"): frozen
    // already, and thawed the way it was frozen.
    const file = /container not running/.test(messageOf(err)) ? await cgroupFrozen(await c.inspect()) : undefined;
    if (!file) throw err;
    return { by: 'cgroup', file };
  }
  return { by: 'docker' };
}

/** Thaws what `freezeContainer` froze; throws when that fails (a cgroup gone: the container with it). */
export async function thawContainer(docker: Docker, name: string, sessionId: string, how: Freeze): Promise<void> {
  if (how.by === 'cgroup') await setFrozen(how.file, false);
  else await unpauseContainer(docker.getContainer(name), sessionId);
}

/** The container's freezer when its cgroup is frozen now by a direct write (Docker's flag says nothing of it). */
async function cgroupFrozen(info: Docker.ContainerInspectInfo): Promise<FreezerFile | undefined> {
  if (!info.State.Running || info.State.Paused) return undefined;
  const file = await freezerFileOf(info.Id, info.State.Pid);
  return file && (await isFrozen(file).catch(() => false)) ? file : undefined;
}

/** Frozen either way, judged from an inspect just made: a frozen executor answers nothing. */
export async function frozenNow(info: Docker.ContainerInspectInfo): Promise<boolean> {
  return info.State.Paused || (await cgroupFrozen(info)) !== undefined;
}

/**
 * Thaws a container found frozen (by a process that died, or another one:
 * only the freezer knows), judged from an inspect just made. True when it
 * thawed it.
 */
export async function thawFound(docker: Docker, info: Docker.ContainerInspectInfo, sessionId: string): Promise<boolean> {
  if (info.State.Paused) {
    await unpauseContainer(docker.getContainer(info.Id), sessionId);
    return true;
  }
  const file = await cgroupFrozen(info);
  if (file) await setFrozen(file, false);
  return file !== undefined;
}

/** Thaws the container when it is frozen (by another process: this one thaws its own on use); one inspect otherwise. True when it thawed it. */
export async function thawIfPaused(docker: Docker, name: string, sessionId: string): Promise<boolean> {
  return thawFound(docker, await docker.getContainer(name).inspect(), sessionId);
}

const UNPAUSE_TRIES = 20;
const UNPAUSE_RETRY_MS = 10;

/**
 * `docker unpause`. dockerd sets its paused flag when it answers a pause or
 * an unpause and again when containerd's event for it arrives, later: right
 * after a quick pause-unpause-pause its flag can say "not paused" (a 500) of
 * a frozen container for some ms (Docker 20.10: 2 cycles in 500 back to
 * back; settled within 30 ms). Taking that answer would leave the executor
 * frozen under the next request, so it is asked again until the flag
 * settles; a container really not paused (thawed elsewhere) costs that wait.
 */
export async function unpauseContainer(container: Docker.Container, sessionId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await container.unpause();
      return;
    } catch (err) {
      if (/container not paused/.test(messageOf(err)) && attempt === 1 && (await refreezeForDocker(container, sessionId))) continue;
      if (!/is not paused/.test(messageOf(err))) throw err;
      if (attempt >= UNPAUSE_TRIES) {
        sandboxLog(sessionId).debug({ err, attempts: attempt }, 'unpause: the container is not paused (thawed elsewhere)');
        return;
      }
    }
    await new Promise((r) => setTimeout(r, UNPAUSE_RETRY_MS));
  }
}

/**
 * Docker says paused but runc finds the freezer thawed (a process that froze
 * it through its cgroup thawed it that way after another one had paused it
 * through Docker, on an engine shared by both ways): runc then refuses every
 * unpause and dockerd every `exec`. Frozen again through the cgroup, the
 * unpause goes through and Docker's flag is right again. False when this
 * process cannot reach the cgroup (the error stands).
 */
async function refreezeForDocker(container: Docker.Container, sessionId: string): Promise<boolean> {
  const info = await container.inspect();
  const file = info.State.Running ? await freezerFileOf(info.Id, info.State.Pid) : undefined;
  if (!file) return false;
  sandboxLog(sessionId).warn('unpause: Docker said paused with the cgroup thawed (two ways of pausing on one engine); frozen again so that Docker thaws it');
  await setFrozen(file, true);
  return true;
}
