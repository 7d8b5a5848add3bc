import type Docker from 'dockerode';
import type { Duplex } from 'node:stream';
import { toContainerSpec } from './container-spec.ts';
import { ExecutorClient } from './executor-client.ts';
import { controlSocketPath, openControlSocket } from './executor-socket.ts';
import { frozenNow, thawFound } from './frozen-container.ts';
import { logSandboxError, sandboxLog } from './log.ts';
import { containerName, LABEL_SESSION, labelsFor, volumeName } from './names.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';
import { teardownSession } from './teardown.ts';
import { LoopDeviceMismatchError, WorkspaceImages } from './workspace-fs.ts';

export class SandboxImageMissingError extends Error {
  readonly code = 'sandbox_image_missing';
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

export async function inspectOrNull(c: Docker.Container): Promise<Docker.ContainerInspectInfo | null> {
  try {
    return await c.inspect();
  } catch (err) {
    if (statusOf(err) === 404) return null;
    throw err;
  }
}

/** Attaches to the container's stdio; closing the client later leaves the container running. */
export async function attachExecutor(
  docker: Docker,
  container: Docker.Container,
  o: { sessionId: string; maxFrameBytes: number },
): Promise<ExecutorClient> {
  const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as unknown as Duplex;
  return new ExecutorClient(stream, (s, out, err) => docker.modem.demuxStream(s, out, err), {
    maxFrameBytes: o.maxFrameBytes,
    sessionId: o.sessionId,
    onError: (err) => logSandboxError(o.sessionId, 'executor channel failed', err),
  });
}

const PROBE_TIMEOUT_MS = 2_000;

/** The last activity a running container's executor reports (the reaper's question); undefined when unknown. */
export async function probeActivity(docker: Docker, containerId: string, maxFrameBytes: number): Promise<number | undefined> {
  const c = docker.getContainer(containerId);
  const info = await inspectOrNull(c);
  if (!info?.State.Running || (await frozenNow(info))) return undefined; // a frozen executor answers nothing
  // A probe that fails means "activity unknown": the reaper falls back to Docker's timestamps.
  const client = await attachExecutor(docker, c, { sessionId: containerId, maxFrameBytes })
    .catch((err: unknown) => void sandboxLog().debug({ err, container: containerId }, 'probe: executor not attachable'));
  if (!client) return undefined;
  try {
    const r = await client.request<{ lastActivity?: number }>('ping', {}, PROBE_TIMEOUT_MS);
    return r.lastActivity;
  } catch (err) {
    sandboxLog().debug({ err, container: containerId }, 'probe: executor did not answer');
    return undefined;
  } finally {
    client.close();
  }
}

/**
 * Finds the session's container (by its deterministic name, so it survives a
 * manager restart), creating it and its workspace volume when absent,
 * starting it when stopped, and returns an attached, answering executor.
 * Safe against another process doing the same at the same time (409/304).
 */
export async function connectSession(
  docker: Docker,
  sessionId: string,
  o: ResolvedSandboxOptions,
  volumeOpts?: Record<string, string>,
  beforeStart?: () => Promise<void>,
): Promise<ExecutorClient> {
  const name = containerName(o.namePrefix, sessionId);
  if (volumeOpts) await dropStaleVolume(docker, sessionId, o, volumeOpts);
  let info = await inspectOrNull(docker.getContainer(name));
  if (info && info.Config.Labels?.[LABEL_SESSION] !== sessionId) {
    throw new Error(`container ${name} exists but is not labelled for session ${sessionId}`);
  }
  if (!info) info = await create(docker, sessionId, o, volumeOpts);
  const container = docker.getContainer(info.Id);
  // Paused by a process that died (a live one thaws its own on use): a frozen executor would not answer the ping.
  await thawFound(docker, info, sessionId);
  const client = await attachExecutor(docker, container, { sessionId, maxFrameBytes: o.maxFrameBytes });
  try {
    if (!info.State.Running) {
      await beforeStart?.();
      try {
        await container.start();
      } catch (err) {
        if (statusOf(err) !== 304) throw err; // 304: someone else started it
      }
    }
    // Written after start, the ping waits in the stdin pipe until the executor
    // reads it, so this works for a fresh start and for a running container.
    const pong = await client.request<{ instance?: string; control?: boolean }>('ping', {}, o.startTimeoutMs);
    return await toControlSocket(client, sessionId, o, pong);
  } catch (err) {
    client.close();
    throw err;
  }
}

/** The attached client traded for one over the control socket when the options say so and the executor has one. */
async function toControlSocket(attached: ExecutorClient, sessionId: string, o: ResolvedSandboxOptions, pong: { instance?: string; control?: boolean }): Promise<ExecutorClient> {
  if (o.executorChannel !== 'socket') return attached;
  const socketPath = controlSocketPath(o.egressDir, o.namePrefix, sessionId);
  const client = await openControlSocket(socketPath, attached, { sessionId, maxFrameBytes: o.maxFrameBytes, ...pong, timeoutMs: o.startTimeoutMs });
  if (!client) return attached;
  attached.close(); // the container and its executor keep running; only dockerd's relay goes
  return client;
}

/**
 * connectSession on the session's workspace image. The loop device must hold
 * this session's image right before dockerd mounts it and once mounted; when
 * it does not (its number was freed and taken by another image meanwhile),
 * the container and volume go and the image is attached again, once.
 */
export async function connectOnImage(docker: Docker, sessionId: string, o: ResolvedSandboxOptions, images: WorkspaceImages): Promise<ExecutorClient> {
  for (let attempt = 1; ; attempt++) {
    const dev = await images.attach(sessionId);
    const check = () => images.assertOwns(sessionId, dev);
    try {
      const client = await connectSession(docker, sessionId, o, WorkspaceImages.volumeOptions(dev), check);
      await check().catch((err: unknown) => {
        client.close();
        throw err;
      });
      return client;
    } catch (err) {
      if (!(err instanceof LoopDeviceMismatchError) || attempt >= 2) throw err;
      logSandboxError(sessionId, 'workspace loop device changed hands before the mount; container and volume made again', err);
      await teardownSession(docker, o.namePrefix, sessionId, null, false);
    }
  }
}

async function create(docker: Docker, sessionId: string, o: ResolvedSandboxOptions, volumeOpts?: Record<string, string>): Promise<Docker.ContainerInspectInfo> {
  const volume = volumeName(o.namePrefix, sessionId);
  await docker.createVolume({ Name: volume, Labels: labelsFor(sessionId, 'workspace'), ...(volumeOpts ? { Driver: 'local', DriverOpts: volumeOpts } : {}) });
  try {
    const c = await docker.createContainer(toContainerSpec(sessionId, volume, o, volumeOpts ? 'loop' : 'watchdog'));
    return await c.inspect();
  } catch (err) {
    if (statusOf(err) === 409) return await inspectCreatedElsewhere(docker.getContainer(containerName(o.namePrefix, sessionId)));
    if (statusOf(err) === 404) {
      throw new SandboxImageMissingError(
        `sandbox image ${o.image} is missing: build it with \`npm run sandbox:image\` (sandbox-image/build.sh)`,
      );
    }
    throw err;
  }
}

// After a 409 the name is reserved by a concurrent create that may not be
// inspectable yet; give it a moment instead of failing the session.
async function inspectCreatedElsewhere(c: Docker.Container): Promise<Docker.ContainerInspectInfo> {
  for (let attempt = 0; ; attempt++) {
    const info = await inspectOrNull(c);
    if (info) return info;
    if (attempt >= 50) throw new Error(`container ${c.id} was being created elsewhere but never appeared`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A volume names its loop device, and device numbers are reused: one left
 * from before a detach (a crash, a reboot) could name another session's
 * filesystem. Unless it names the session's device now, it and its container
 * go (the data is in the image, not in them) and are made again. A plain
 * volume of a session from before loop mode stays: its container watches its
 * quota itself (THINKFLOW_WORKSPACE_FS=watchdog in its environment).
 */
async function dropStaleVolume(docker: Docker, sessionId: string, o: ResolvedSandboxOptions, want: Record<string, string>): Promise<void> {
  const volume = docker.getVolume(volumeName(o.namePrefix, sessionId));
  const info = (await volume.inspect().catch((err: unknown) => {
    if (statusOf(err) === 404) return null;
    throw err;
  })) as { Options?: Record<string, string> | null } | null;
  const device = info?.Options?.device;
  if (info && (device === undefined || device === want.device)) return;
  await docker.getContainer(containerName(o.namePrefix, sessionId)).remove({ force: true }).catch(notFound);
  if (info) await volume.remove().catch(notFound);
}

function notFound(err: unknown): void {
  if (statusOf(err) !== 404) throw err;
}
