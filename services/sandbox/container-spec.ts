import type Docker from 'dockerode';
import { containerName, labelsFor } from './names.ts';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';

export const WORKSPACE = '/workspace';

/**
 * The one boundary from options to dockerode. The only mount is the
 * session's named volume: no host path and no Docker socket ever goes in.
 */
export function toContainerSpec(sessionId: string, volume: string, o: ResolvedSandboxOptions): Docker.ContainerCreateOptions {
  return {
    name: containerName(o.namePrefix, sessionId),
    Image: o.image,
    Labels: labelsFor(sessionId, 'sandbox'),
    User: o.user,
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
      CapAdd: o.capAdd,
      SecurityOpt: o.noNewPrivileges ? ['no-new-privileges'] : [],
      ReadonlyRootfs: o.readOnlyRootfs,
      Tmpfs: o.tmpfs,
      PidsLimit: o.pidsLimit,
      Memory: o.memoryBytes,
      MemorySwap: o.memorySwapBytes,
      NanoCpus: Math.round(o.cpus * 1e9),
      Ulimits: [{ Name: 'nofile', Soft: o.nofile, Hard: o.nofile }],
      Mounts: [{ Type: 'volume', Source: volume, Target: WORKSPACE }],
      Privileged: false,
      // Responses must not pile up in a json log on the host: the manager reads them live.
      LogConfig: { Type: 'none', Config: {} },
      RestartPolicy: { Name: 'no' },
    },
  };
}
