import { access, constants } from 'node:fs/promises';
import type Docker from 'dockerode';
import { runHostTool } from './host-tools.ts';
import { sandboxLog } from './log.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';
import { WorkspaceImages } from './workspace-fs.ts';

/**
 * `loop`: every workspace is its own ext4 image on a loop device (the kernel
 * enforces the quota and the inode count). `watchdog`: a plain Docker volume
 * on the host's disk with the executor's statfs watchdog, the fallback for a
 * host that cannot make loop devices (not root, no /dev/loop-control, or a
 * remote Docker engine that would not see them).
 */
export type WorkspaceFsMode = 'loop' | 'watchdog';
export type WorkspaceFsSetting = WorkspaceFsMode | 'auto';

/** Why this host cannot give each workspace its own filesystem, or null when it can. */
export async function loopUnavailable(docker: Docker): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'the service does not run as root (losetup needs it)';
  try {
    await access('/dev/loop-control', constants.R_OK | constants.W_OK);
  } catch {
    return '/dev/loop-control is missing or not writable (no loop module?)';
  }
  // dockerd mounts the device: it must run on this host, reached over its local socket.
  const modem = (docker as unknown as { modem?: { socketPath?: unknown; host?: unknown } }).modem;
  if (modem?.host || !modem?.socketPath) return 'the Docker engine is not reached over a local socket';
  for (const [tool, args] of [['losetup', ['--version']], ['mkfs.ext4', ['-V']], ['debugfs', ['-V']], ['cp', ['--version']]] as const) {
    try {
      await runHostTool(tool, [...args], 5_000);
    } catch (err) {
      return `${tool} cannot run (${(err as Error).message}); install util-linux/e2fsprogs`;
    }
  }
  return null;
}

/** Resolves `auto`; a forced `loop` on a host that cannot do it is an error, a fallback to the watchdog is said loudly. */
export async function resolveWorkspaceMode(setting: WorkspaceFsSetting, docker: Docker): Promise<WorkspaceFsMode> {
  if (setting === 'watchdog') {
    sandboxLog().warn('workspace quota: THINKFLOW_WORKSPACE_FS=watchdog; workspaces share the host disk, the quota is a watchdog with overshoot and inodes are not limited');
    return 'watchdog';
  }
  const why = await loopUnavailable(docker);
  if (why === null) return 'loop';
  if (setting === 'loop') throw new Error(`THINKFLOW_WORKSPACE_FS=loop but this host cannot attach loop devices: ${why}`);
  sandboxLog().warn(
    { reason: why },
    'workspace quota: NO per-session filesystem on this host; falling back to the statfs watchdog (overshoot possible, inodes not limited). Run as root with loop devices for an exact quota',
  );
  return 'watchdog';
}

/** The host's workspace images for these options, or null where workspaces are plain volumes (watchdog). */
export async function workspaceImagesFor(o: ResolvedSandboxOptions, docker: Docker): Promise<WorkspaceImages | null> {
  if ((await resolveWorkspaceMode(o.workspaceFs, docker)) === 'watchdog') return null;
  const [uid, gid] = o.user.split(':');
  return new WorkspaceImages({
    dir: o.workspaceDir, namePrefix: o.namePrefix,
    bytes: o.workspaceQuotaBytes, inodes: o.workspaceInodes, owner: `${uid}:${gid ?? uid}`, spares: o.workspaceSpares,
  });
}
