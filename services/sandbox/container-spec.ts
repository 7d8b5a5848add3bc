import type Docker from 'dockerode';
import { EGRESS_MOUNT, egressHostDir } from './egress-dirs.ts';
import { containerName, labelsFor } from './names.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';

export const WORKSPACE = '/workspace';
/**
 * The workspace volume once more, where only root in the container reaches
 * (the image makes /var/lib/thinkflow mode 0700): the baseline is kept on the
 * workspace's filesystem under PRIVATE_DIR, which commands see only as the
 * empty read-only tmpfs laid over it (sandbox-image/executor/baseline-store.mjs).
 */
export const WORKSPACE_ROOT_PRIVATE = '/var/lib/thinkflow/ws';
export const PRIVATE_DIR = '.thinkflow-private';
/** The executor's Node.js and the workspace programs' (sandbox-image/build.sh); commands keep Debian's on their PATH. */
export const EXECUTOR_NODE = '/opt/thinkflow/runtime/node';
/**
 * What the executor needs, and commands never get: SETUID/SETGID/SETPCAP to
 * start commands as another user with no capability, DAC_READ_SEARCH so the
 * quota walk sees directories a command made unreadable.
 */
export const EXECUTOR_CAPS = ['SETUID', 'SETGID', 'SETPCAP', 'DAC_READ_SEARCH'];

/**
 * The one boundary from options to dockerode. The mounts are the session's
 * named volume (twice, see WORKSPACE_ROOT_PRIVATE) and the session's own
 * egress directory (EGRESS_MOUNT, below the root-only /var/lib/thinkflow):
 * no other host path and no Docker socket ever goes in.
 */
export function toContainerSpec(
  sessionId: string,
  volume: string,
  o: ResolvedSandboxOptions,
  fsMode: 'loop' | 'watchdog' = 'watchdog',
): Docker.ContainerCreateOptions {
  return {
    name: containerName(o.namePrefix, sessionId),
    Image: o.image,
    Labels: labelsFor(sessionId, 'sandbox'),
    // The executor is root (with EXECUTOR_CAPS only); commands run as o.user.
    User: '0:0',
    // The executor watches the quota itself only when the kernel does not (fsMode 'watchdog').
    Env: [`THINKFLOW_RUN_AS=${o.user}`, `THINKFLOW_WORKSPACE_FS=${fsMode}`, `THINKFLOW_EGRESS_RELAY_MAX=${o.egressRelayMaxConnections}`],
    WorkingDir: WORKSPACE,
    Hostname: 'sandbox',
    // The executor talks over the attached stdio; stdin must outlive any one
    // attach so a restarted manager can attach again.
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    NetworkDisabled: o.networkMode === 'none',
    StopTimeout: 2,
    HostConfig: {
      NetworkMode: o.networkMode,
      CapDrop: o.capDrop,
      CapAdd: [...new Set([...o.capAdd, ...EXECUTOR_CAPS])],
      SecurityOpt: [...(o.noNewPrivileges ? ['no-new-privileges'] : []), ...seccompOpt(o.seccompProfile)],
      ReadonlyRootfs: o.readOnlyRootfs,
      Tmpfs: { ...o.tmpfs, [`${WORKSPACE}/${PRIVATE_DIR}`]: 'ro,nosuid,nodev,noexec,size=4k,mode=0555' },
      PidsLimit: o.pidsLimit,
      Memory: o.memoryBytes,
      MemorySwap: o.memorySwapBytes,
      NanoCpus: Math.round(o.cpus * 1e9),
      Ulimits: [
        { Name: 'nofile', Soft: o.nofile, Hard: o.nofile },
        { Name: 'fsize', Soft: o.workspaceQuotaBytes, Hard: o.workspaceQuotaBytes },
      ],
      Mounts: [
        { Type: 'volume', Source: volume, Target: WORKSPACE },
        { Type: 'volume', Source: volume, Target: WORKSPACE_ROOT_PRIVATE },
        // Read-write: connect(2) to the proxy's socket needs it. Docker takes no nosuid/nodev/noexec for a bind (README, "Network egress").
        { Type: 'bind', Source: egressHostDir(o.egressDir, o.namePrefix, sessionId), Target: EGRESS_MOUNT, ReadOnly: false },
      ],
      Privileged: false,
      // Responses must not pile up in a json log on the host: the manager reads them live.
      LogConfig: { Type: 'none', Config: {} },
      RestartPolicy: { Name: 'no' },
    },
  };
}

/** 'default' leaves Docker's built-in profile; anything else is passed as is ('unconfined' or the profile's JSON text). */
function seccompOpt(profile: string): string[] {
  return profile === 'default' ? [] : [`seccomp=${profile}`];
}
