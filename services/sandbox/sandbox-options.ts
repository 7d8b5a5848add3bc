import { readFileSync } from 'node:fs';
import { ENV_DEFAULTS } from '../config/index.ts';
import type { ExecutorChannel } from './executor-socket.ts';
import type { PauseWith } from './frozen-container.ts';

/**
 * Cap on stdout and on stderr of a command, each: the executor's, and again
 * the pipeline's (in characters) when it records a result. Not an environment setting.
 */
export const DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024;

/**
 * Hardening and limits of a session container. Every field is optional; the
 * defaults are the secure ones, and loosening one is a deliberate choice.
 */
export interface SandboxOptions {
  /** The composition root passes THINKFLOW_SANDBOX_IMAGE from the env schema. @default 'thinkflow/sandbox:latest' */
  image?: string;
  /** Docker network mode. @default 'none' */
  networkMode?: string;
  /** Capabilities dropped. @default ['ALL'] */
  capDrop?: string[];
  /** Capabilities added back after the drop. @default [] */
  capAdd?: string[];
  /** `--security-opt no-new-privileges`. @default true */
  noNewPrivileges?: boolean;
  /**
   * Seccomp profile: its JSON text (Docker's API takes the content, not a
   * path), 'default' for Docker's built-in profile, or 'unconfined' (a
   * deliberate loosening).
   * @default the text of sandbox-image/seccomp.json (Docker's default with io_uring denied)
   */
  seccompProfile?: string;
  /** Read-only root filesystem (the workspace volume and tmpfs mounts stay writable). @default true */
  readOnlyRootfs?: boolean;
  /**
   * tmpfs mounts, path to mount options. HOME is a tmpfs, emptied before every command (sandbox-image/executor/home.mjs).
   * @default { '/tmp': 'rw,nosuid,nodev,exec,size=256m,mode=1777', '/home/sandbox': 'rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0700' }
   */
  tmpfs?: Record<string, string>;
  /**
   * uid:gid every command runs as, with no capability. The executor itself
   * runs as root in the container with only SETUID, SETGID and SETPCAP (to
   * start commands as this user), out of reach of the commands it runs.
   * '0:0' runs commands as root too (no separation: a deliberate loosening).
   * @default '1000:1000'
   */
  user?: string;
  /** Max processes and threads in the container. @default 256 */
  pidsLimit?: number;
  /** Memory limit in bytes. @default 1073741824 (1 GiB) */
  memoryBytes?: number;
  /** Memory + swap in bytes; equal to `memoryBytes` means no swap. @default memoryBytes */
  memorySwapBytes?: number;
  /** CPU limit in cores. @default 1 */
  cpus?: number;
  /** Open files limit (soft and hard). @default 4096 */
  nofile?: number;
  /** Wall-clock limit of a `bash` command without a `timeout` attribute. @default 120000 */
  bashTimeoutMs?: number;
  /** Upper bound for a `timeout` attribute. @default 3600000 */
  maxBashTimeoutMs?: number;
  /** Cap on stdout and on stderr of a command, each. @default 65536 */
  outputCapBytes?: number;
  /** Cap on the content a `read` returns. @default 1048576 */
  readCapBytes?: number;
  /** Cap on the bytes `readPath` returns for a file. @default 16777216 */
  readPathCapBytes?: number;
  /**
   * Workspace quota in bytes (THINKFLOW_WORKSPACE_QUOTA_MB). Also the
   * container's RLIMIT_FSIZE, so no single file outgrows it.
   * @default 2147483648 (2048 MiB)
   */
  workspaceQuotaBytes?: number;
  /**
   * How the quota is enforced (THINKFLOW_WORKSPACE_FS): `loop` gives each
   * workspace its own ext4 image on a loop device, `watchdog` a plain volume
   * watched by the executor, `auto` the first when the host can. @default 'auto'
   */
  workspaceFs?: 'auto' | 'loop' | 'watchdog';
  /** Directory of the workspace images (THINKFLOW_WORKSPACE_DIR). @default '/var/lib/thinkflow/workspaces' */
  workspaceDir?: string;
  /** Inodes of each workspace filesystem (THINKFLOW_WORKSPACE_INODES). @default 100000 */
  workspaceInodes?: number;
  /** Workspace images kept ready on a loop device, so a new session's attach is a rename (THINKFLOW_WORKSPACE_SPARES). @default 2 */
  workspaceSpares?: number;
  /**
   * Host directory of the sessions' egress directories (THINKFLOW_EGRESS_DIR): `<egressDir>/<prefix><slug>/egress.sock`
   * is where the session's egress proxy listens, bind-mounted into its container (egress-dirs.ts).
   * @default '/var/lib/thinkflow/egress'
   */
  egressDir?: string;
  /**
   * Connections the in-container relay carries to the egress proxy at once; past it a client gets a 503.
   * Set in the container's environment when it is created. @default 64
   */
  egressRelayMaxConnections?: number;
  /**
   * How requests reach the executor (THINKFLOW_EXECUTOR_CHANNEL): `socket`, its control socket in the
   * session's directory (executor-socket.ts), or `attach`, dockerd's attach stream, which relays every byte twice.
   * @default 'socket'
   */
  executorChannel?: ExecutorChannel;
  /** Largest line the host accepts from an executor; past it the container is declared broken. @default 33554432 */
  maxFrameBytes?: number;
  /** Host-side limit for a non-bash request (bash gets its timeout plus this). @default 30000 */
  requestTimeoutMs?: number;
  /** Limit for a container to start and report ready (counted once its start has a slot). @default 30000 */
  startTimeoutMs?: number;
  /** Sessions whose containers are being opened at once by this process; the rest wait their turn (THINKFLOW_SANDBOX_START_CONCURRENCY). @default 4 */
  startConcurrency?: number;
  /** Prefix of container and volume names. @default 'thinkflow-' */
  namePrefix?: string;
  /** Sessions unused for longer than this are reaped. @default 86400000 (24 h) */
  idleTtlMs?: number;
  /** Running containers unused for longer than this are stopped by the reaper (kept, restarted on the next command). @default 600000 (10 min) */
  idleStopMs?: number;
  /**
   * Running containers with nothing of this process in flight for longer than this are paused (cgroup freezer,
   * see pauseWith; idle-pause.ts) and unpaused by their next use; 0 never pauses (THINKFLOW_IDLE_PAUSE_S). @default 30000
   */
  idlePauseMs?: number;
  /**
   * How a container is paused: `auto` writes its cgroup freezer directly where this process reaches it (a local engine,
   * the host's /proc and /sys/fs/cgroup; microseconds) and uses `docker pause` elsewhere; `docker` always uses
   * `docker pause` (THINKFLOW_PAUSE_WITH; frozen-container.ts). @default 'auto'
   */
  pauseWith?: PauseWith;
  /** Period of the background reaper once started; 0 turns it off. @default 600000 */
  reapIntervalMs?: number;
}

export type ResolvedSandboxOptions = Required<SandboxOptions>;

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const SHIPPED_SECCOMP = new URL('../../sandbox-image/seccomp.json', import.meta.url);
let shippedSeccomp: string | undefined;

/** The shipped profile, read once; compacted so it travels as a short SecurityOpt. */
export function shippedSeccompProfile(): string {
  shippedSeccomp ??= JSON.stringify(JSON.parse(readFileSync(SHIPPED_SECCOMP, 'utf8')));
  return shippedSeccomp;
}

export function resolveSandboxOptions(o: SandboxOptions = {}): ResolvedSandboxOptions {
  const memoryBytes = o.memoryBytes ?? GiB;
  return {
    image: o.image ?? ENV_DEFAULTS.THINKFLOW_SANDBOX_IMAGE,
    networkMode: o.networkMode ?? 'none',
    capDrop: o.capDrop ?? ['ALL'],
    capAdd: o.capAdd ?? [],
    noNewPrivileges: o.noNewPrivileges ?? true,
    seccompProfile: o.seccompProfile ?? shippedSeccompProfile(),
    readOnlyRootfs: o.readOnlyRootfs ?? true,
    tmpfs: o.tmpfs ?? {
      '/tmp': 'rw,nosuid,nodev,exec,size=256m,mode=1777',
      '/home/sandbox': 'rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0700',
    },
    user: o.user ?? '1000:1000',
    pidsLimit: o.pidsLimit ?? 256,
    memoryBytes,
    memorySwapBytes: o.memorySwapBytes ?? memoryBytes,
    cpus: o.cpus ?? 1,
    nofile: o.nofile ?? 4096,
    bashTimeoutMs: o.bashTimeoutMs ?? 120_000,
    maxBashTimeoutMs: o.maxBashTimeoutMs ?? 3_600_000,
    outputCapBytes: o.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES,
    readCapBytes: o.readCapBytes ?? 1_048_576,
    readPathCapBytes: o.readPathCapBytes ?? 16_777_216,
    workspaceQuotaBytes: o.workspaceQuotaBytes ?? ENV_DEFAULTS.THINKFLOW_WORKSPACE_QUOTA_MB * MiB,
    workspaceFs: o.workspaceFs ?? ENV_DEFAULTS.THINKFLOW_WORKSPACE_FS,
    workspaceDir: o.workspaceDir ?? ENV_DEFAULTS.THINKFLOW_WORKSPACE_DIR,
    workspaceInodes: o.workspaceInodes ?? ENV_DEFAULTS.THINKFLOW_WORKSPACE_INODES,
    workspaceSpares: o.workspaceSpares ?? ENV_DEFAULTS.THINKFLOW_WORKSPACE_SPARES,
    egressDir: o.egressDir ?? ENV_DEFAULTS.THINKFLOW_EGRESS_DIR,
    egressRelayMaxConnections: o.egressRelayMaxConnections ?? 64,
    executorChannel: o.executorChannel ?? ENV_DEFAULTS.THINKFLOW_EXECUTOR_CHANNEL,
    maxFrameBytes: o.maxFrameBytes ?? 32 * MiB,
    requestTimeoutMs: o.requestTimeoutMs ?? 30_000,
    startTimeoutMs: o.startTimeoutMs ?? 30_000,
    startConcurrency: o.startConcurrency ?? ENV_DEFAULTS.THINKFLOW_SANDBOX_START_CONCURRENCY,
    namePrefix: o.namePrefix ?? ENV_DEFAULTS.THINKFLOW_SANDBOX_PREFIX,
    idleTtlMs: o.idleTtlMs ?? 86_400_000,
    idleStopMs: o.idleStopMs ?? ENV_DEFAULTS.THINKFLOW_SANDBOX_IDLE_STOP_S * 1000,
    idlePauseMs: o.idlePauseMs ?? ENV_DEFAULTS.THINKFLOW_IDLE_PAUSE_S * 1000,
    pauseWith: o.pauseWith ?? ENV_DEFAULTS.THINKFLOW_PAUSE_WITH,
    reapIntervalMs: o.reapIntervalMs ?? 600_000,
  };
}
