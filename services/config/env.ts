import { z } from 'zod';
import { parseRedisUrl } from './redis-url.ts';

// One schema for the process environment: defaults live here and nowhere else.
const int = (d: number) => z.coerce.number().int().nonnegative().default(d);

/**
 * The defaults a lower layer also falls back to when its caller passes
 * nothing (the sandbox's options): set once here, imported there.
 */
export const ENV_DEFAULTS = {
  THINKFLOW_SANDBOX_PREFIX: 'thinkflow-',
  THINKFLOW_SANDBOX_IMAGE: 'thinkflow/sandbox:latest',
  THINKFLOW_WORKSPACE_QUOTA_MB: 2048,
  THINKFLOW_WORKSPACE_FS: 'auto',
  THINKFLOW_WORKSPACE_DIR: '/var/lib/thinkflow/workspaces',
  THINKFLOW_WORKSPACE_INODES: 100_000,
  THINKFLOW_WORKSPACE_SPARES: 2, THINKFLOW_WARM_POOL: 2,
  THINKFLOW_SANDBOX_IDLE_STOP_S: 600, THINKFLOW_IDLE_PAUSE_S: 30, THINKFLOW_PAUSE_WITH: 'auto',
  THINKFLOW_EGRESS_DIR: '/var/lib/thinkflow/egress',
  THINKFLOW_EXECUTOR_CHANNEL: 'socket',
  THINKFLOW_SANDBOX_START_CONCURRENCY: 4,
  THINKFLOW_PREVIEW_MAX_WORKSPACE_MB: 256, THINKFLOW_PREVIEW_TIMEOUT_S: 60, THINKFLOW_PREVIEWS_PER_WORKER: 2,
} as const;
const D = ENV_DEFAULTS;

export const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  // One Redis, a Cluster or Sentinel (redis-url.ts): a bad one is refused here with what was wrong.
  REDIS_URL: z.string().default('redis://127.0.0.1:6379').superRefine((url, ctx) => {
    try { parseRedisUrl(url); } catch (err) { ctx.addIssue({ code: 'custom', message: (err as Error).message }); }
  }),
  THINKFLOW_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  THINKFLOW_API_KEYS: z.string().optional(),
  THINKFLOW_POLICY_DIR: z.string().default('./policies'),
  THINKFLOW_APPROVAL_TTL_S: z.coerce.number().int().positive().default(900),
  /** namespace of every Redis key (tests use a unique one) */
  THINKFLOW_REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/).default('tf'),
  THINKFLOW_MAX_JSON_BYTES: int(2 * 1024 * 1024),
  THINKFLOW_MAX_COMMANDS_BYTES: int(16 * 1024 * 1024),
  /** PUT /v1/sessions/:id/workspace: the archive as sent (compressed) in MiB; past it 413 */
  THINKFLOW_MAX_UPLOAD_MB: z.coerce.number().int().min(1).default(256),
  /** a connection the policy prompts for waits this long for an operator, then is refused (POLICY.md §8) */
  THINKFLOW_EGRESS_PROMPT_WAIT_S: z.coerce.number().int().min(1).default(60),
  /** connections through one session's egress proxy at once; more are refused */
  THINKFLOW_EGRESS_MAX_CONNECTIONS: z.coerce.number().int().min(1).default(64),
  /** BullMQ job lock: a dead worker's jobs come back after lock + stalled interval unless its heartbeat's takeover (pipeline/worker-liveness.ts) came first, in about 2 s */
  THINKFLOW_LOCK_MS: int(30_000),
  THINKFLOW_STALLED_INTERVAL_MS: int(30_000),
  /** a session's BullMQ Worker is closed after this long without a job */
  THINKFLOW_WORKER_IDLE_MS: int(10_000),
  /** a session's run job waits this long on its emptied run list for the next command before it ends (0 = at once): turns one after the other share one BullMQ job */
  THINKFLOW_RUN_LINGER_MS: z.coerce.number().int().min(0).max(60_000).default(250),
  /** SIGTERM: in-flight HTTP requests and running commands get this long to finish; commands still running then end `interrupted` */
  THINKFLOW_SHUTDOWN_GRACE_S: int(30),
  /** bytes of a command's bodies a ledger record or event keeps (cut at a UTF-8 boundary; full size and SHA-256 kept) */
  THINKFLOW_RECORD_BODY_BYTES: int(64 * 1024),
  /** a deleted session's keys (ledger, events, queue) and a finished job's expire after this many seconds */
  THINKFLOW_RETENTION_S: z.coerce.number().int().min(1).default(7 * 24 * 3600),
  /** name prefix of session containers and volumes (tests isolate with their own) */
  THINKFLOW_SANDBOX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,40}$/).default(D.THINKFLOW_SANDBOX_PREFIX),
  /** any OpenAI-compatible endpoint, with its version path; unset = the built-in replay model */
  OPENAI_BASE_URL: z.string().url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  /** required with OPENAI_BASE_URL (no silent default: a wrong model name would bill or fail far from here) */
  THINKFLOW_MODEL: z.string().min(1).optional(),
  THINKFLOW_MODEL_IDLE_S: z.coerce.number().int().min(1).default(300), // a call silent this long mid-stream is given up (agent/model-idle.ts)
  /** image of the session containers */
  THINKFLOW_SANDBOX_IMAGE: z.string().min(1).default(D.THINKFLOW_SANDBOX_IMAGE),
  /** PROTOCOL.md §1: bare legacy tag names (`<write …>`) are commands too (off by default) */
  THINKFLOW_LEGACY_TAGS: z.stringbool().default(false),
  /** PROTOCOL.md §3: a tag body over this many UTF-8 bytes is a `too_large` parse error */
  THINKFLOW_MAX_TAG_BODY_BYTES: z.coerce.number().int().positive().default(8 * 1024 * 1024),
  /** events kept per session (and job) stream while it exists; 0 = every event. A client resuming before the oldest kept one gets a `gap` event */
  THINKFLOW_EVENTS_KEEP: int(0),
  /** HMAC key of webhook signatures; unset = a random key per process (logged as a warning) */
  THINKFLOW_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** comma-separated hosts, host:port or CIDRs webhooks may reach; unset = any but loopback, link-local and cloud metadata */
  THINKFLOW_WEBHOOK_ALLOW: z.string().optional(),
  /** comma-separated extra `Host` names dev mode answers (besides localhost, 127.0.0.1, [::1]) */
  THINKFLOW_ALLOWED_HOSTS: z.string().default(''),
  /** comma-separated exact origins (`https://ops.example`) allowed to call cross-origin; unset = none */
  THINKFLOW_CORS_ORIGINS: z.string().default(''),
  /** seconds without a heartbeat after which another API process fails a runner's unfinished jobs */
  THINKFLOW_RUNNER_TTL_S: z.coerce.number().int().min(1).max(3600).default(20),
  /** workspace quota per session in MiB; a command that writes past it fails with workspace_full */
  THINKFLOW_WORKSPACE_QUOTA_MB: z.coerce.number().int().min(1).default(D.THINKFLOW_WORKSPACE_QUOTA_MB),
  /** each workspace is an ext4 image (size = quota) on a loop device: `auto` when the host can (root, /dev/loop-control), else the watchdog, said loudly */
  THINKFLOW_WORKSPACE_FS: z.enum(['auto', 'loop', 'watchdog']).default(D.THINKFLOW_WORKSPACE_FS),
  THINKFLOW_WORKSPACE_DIR: z.string().min(1).default(D.THINKFLOW_WORKSPACE_DIR),
  /** per-session directories (0700) of the egress proxies' Unix sockets, each bind-mounted into its sandbox */
  THINKFLOW_EGRESS_DIR: z.string().min(1).default(D.THINKFLOW_EGRESS_DIR),
  /** `socket`: requests go to the executor over its socket in the session's egress directory; `attach`: over dockerd's attach stream */
  THINKFLOW_EXECUTOR_CHANNEL: z.enum(['socket', 'attach']).default(D.THINKFLOW_EXECUTOR_CHANNEL),
  /** containers a worker process opens at once (create, start, first answer); more sessions wait their turn */
  THINKFLOW_SANDBOX_START_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(D.THINKFLOW_SANDBOX_START_CONCURRENCY),
  THINKFLOW_WORKSPACE_INODES: z.coerce.number().int().min(1024).default(D.THINKFLOW_WORKSPACE_INODES),
  /** workspace images kept ready on a loop device per process (0: made on a session's first command); warm sandboxes (container, workspace, executor) a worker keeps for new sessions (0: none) */
  THINKFLOW_WORKSPACE_SPARES: z.coerce.number().int().min(0).max(64).default(D.THINKFLOW_WORKSPACE_SPARES), THINKFLOW_WARM_POOL: z.coerce.number().int().min(0).max(64).default(D.THINKFLOW_WARM_POOL),
  /** per-key caps (429 too_many): open sessions, sessions with work in progress, open SSE streams */
  THINKFLOW_MAX_SESSIONS_PER_KEY: z.coerce.number().int().min(1).default(100),
  THINKFLOW_MAX_RUNNING_PER_KEY: z.coerce.number().int().min(1).default(20),
  THINKFLOW_MAX_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(50),
  /** POST /commands turns of one key running at once in this process (each holds its body in memory) */
  THINKFLOW_MAX_TURNS_PER_KEY: z.coerce.number().int().min(1).default(8),
  /** commands in one turn (a POST /commands, or a job's model call): past it `too_many_commands` */
  THINKFLOW_MAX_COMMANDS_PER_TURN: z.coerce.number().int().min(1).default(1000),
  /** Redis bytes per key (records, events; deleted sessions until their retention ends): past it 429 storage_quota_exceeded. 256 MiB: about five worst-case 16 MiB turns, and 8 keys at their budget still fit the compose file's 2 GB maxmemory */
  THINKFLOW_STORE_BYTES_PER_KEY: z.coerce.number().int().min(1).default(256 * 1024 * 1024),
  /** HTTP server: time to receive a request's headers, its whole body, and the idle time between keep-alive requests */
  THINKFLOW_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  THINKFLOW_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1).default(120_000),
  THINKFLOW_KEEPALIVE_TIMEOUT_MS: z.coerce.number().int().min(1).default(5_000),
  /** open connections per client address; more are closed at once (behind a proxy, raise it) */
  THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).default(128),
  /** a session's container is stopped after this long unused (kept with its workspace; the next command starts it) */
  THINKFLOW_SANDBOX_IDLE_STOP_S: z.coerce.number().int().min(1).default(D.THINKFLOW_SANDBOX_IDLE_STOP_S),
  THINKFLOW_PAUSE_WITH: z.enum(['auto', 'docker']).default(D.THINKFLOW_PAUSE_WITH), // auto: the cgroup freezer written directly where this process reaches it, `docker pause` elsewhere
  THINKFLOW_IDLE_PAUSE_S: int(D.THINKFLOW_IDLE_PAUSE_S), // with nothing in flight this long it is paused first (cgroup freezer; its next use unpauses it); 0 = never
  /** how often the worker's reaper runs (stops idle containers, removes those of deleted or long-idle sessions) */
  THINKFLOW_SANDBOX_REAP_INTERVAL_S: z.coerce.number().int().min(1).default(60),
  /** approval previews (POST /v1/approvals/:token/preview): a larger workspace is not copied; the command's timeout is capped; previews one worker runs at once */
  THINKFLOW_PREVIEW_MAX_WORKSPACE_MB: z.coerce.number().int().min(1).default(D.THINKFLOW_PREVIEW_MAX_WORKSPACE_MB), THINKFLOW_PREVIEW_TIMEOUT_S: z.coerce.number().int().min(1).max(600).default(D.THINKFLOW_PREVIEW_TIMEOUT_S), THINKFLOW_PREVIEWS_PER_WORKER: z.coerce.number().int().min(0).max(16).default(D.THINKFLOW_PREVIEWS_PER_WORKER),
  /** sandbox calls (pipeline/sandbox-calls: an API process reads workspaces through a worker): not taken → 503 sandbox_unavailable; taken, no answer → 504 sandbox_timeout;
   * a stream moving nothing is cut (sandbox_timeout); an answer held whole over MAX_ANSWER_MB → 502 sandbox_answer_too_large; calls one worker serves at once */
  THINKFLOW_SANDBOX_CALL_PICKUP_MS: z.coerce.number().int().min(1).default(5_000),
  THINKFLOW_SANDBOX_CALL_ANSWER_MS: z.coerce.number().int().min(1).default(120_000),
  THINKFLOW_SANDBOX_CALL_STALL_MS: z.coerce.number().int().min(1).default(30_000),
  THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB: z.coerce.number().int().min(1).default(32),
  THINKFLOW_SANDBOX_CALLS_PER_WORKER: z.coerce.number().int().min(1).default(16),
  /** pino level of the service's JSON log lines on stderr */
  THINKFLOW_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** approval cards: an edit side over these bytes or lines gets no diff ("content too large to diff", sizes, sha256); jsdiff gives up after the ms (in a worker thread) */
  THINKFLOW_DIFF_MAX_BYTES: z.coerce.number().int().min(1).default(64 * 1024),
  THINKFLOW_DIFF_MAX_LINES: z.coerce.number().int().min(1).default(2000),
  THINKFLOW_DIFF_TIMEOUT_MS: z.coerce.number().int().min(1).default(1000),
  /** a JSON file of extra replay transcripts (an array), served before the built-in ones */
  THINKFLOW_REPLAY_SCRIPTS: z.string().min(1).optional(),
});

/** The roles of API keys (API.md): the one list, also the API's `whoami` schema. */
export const ROLES = ['submitter', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];
export type ApiKeys = Map<string, Role>;

export type Config = {
  port: number; host: string;
  redisUrl: string;
  role: 'api' | 'worker' | 'all';
  /** null = dev mode (no keys): loopback only */
  apiKeys: ApiKeys | null;
  /** display names of keys (`key:role:name`); keys without one are named by their digest */
  apiKeyNames: Map<string, string>;
  policyDir: string;
  approvalTtlS: number;
  redisPrefix: string;
  maxJsonBytes: number; maxCommandsBytes: number;
  /** THINKFLOW_MAX_UPLOAD_MB in bytes */
  maxUploadBytes: number;
  egress: { promptWaitS: number; maxConnections: number };
  lockMs: number; stalledIntervalMs: number; workerIdleMs: number; /** THINKFLOW_RUN_LINGER_MS */ runLingerMs: number;
  /** THINKFLOW_SHUTDOWN_GRACE_S */ shutdownGraceS: number;
  recordBodyBytes: number; retentionS: number;
  sandboxPrefix: string;
  /** name is null only with the built-in replay model (baseUrl null) */
  model: { baseUrl: string | null; apiKey: string | null; name: string | null; /** THINKFLOW_MODEL_IDLE_S in ms */ idleMs: number };
  sandboxImage: string; executorChannel: 'socket' | 'attach'; sandboxStartConcurrency: number;
  /** the tf-* parser of the service (jobs and /commands) */
  parser: { legacyTags: boolean; maxBodyBytes: number };
  eventsKeep: number;
  webhookSecret: string | null;
  /** THINKFLOW_WEBHOOK_ALLOW as written; null = the default refusals only */
  webhookAllow: string | null;
  /** browser guards (services/api/middleware/origin.ts) */
  web: { allowedHosts: string[]; corsOrigins: string[] };
  runnerTtlS: number;
  replayScripts: string | null;
  workspaceQuotaMb: number;
  workspace: { fs: 'auto' | 'loop' | 'watchdog'; dir: string; inodes: number; spares: number; /** THINKFLOW_WARM_POOL */ warmPool: number };
  /** THINKFLOW_EGRESS_DIR */
  egressDir: string;
  caps: { maxSessionsPerKey: number; maxRunningPerKey: number; maxStreamsPerKey: number; maxTurnsPerKey: number };
  maxCommandsPerTurn: number;
  /** THINKFLOW_STORE_BYTES_PER_KEY */
  storeBytesPerKey: number;
  http: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number; maxConnectionsPerAddress: number };
  sandboxIdleStopS: number; sandboxIdlePauseS: number; sandboxPauseWith: 'auto' | 'docker'; sandboxReapIntervalS: number;
  preview: { maxWorkspaceBytes: number; maxRunMs: number; perProcess: number }; // THINKFLOW_PREVIEW_*: approval previews (sandbox/preview-options.ts)
  /** THINKFLOW_SANDBOX_CALL*: the bounds of the calls of an API process to the workers (pipeline/sandbox-calls) */
  sandboxCalls: { pickupMs: number; answerMs: number; stallMs: number; maxAnswerBytes: number; callsPerWorker: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  approvalDiff: { maxBytes: number; maxLines: number; timeoutMs: number };
};

/** A key's display name: set as `key:role:name`, else its non-secret digest (`key-…`). */
const KEY_NAME = /^[A-Za-z0-9_.@-]{1,40}$/;
const isRole = (s: string | undefined): s is Role => (ROLES as readonly (string | undefined)[]).includes(s);

/**
 * `key:role[:name],…` → entries; throws with the offending pair (key masked)
 * so a typo never opens the API. A name is what dashboards and ledgers show
 * instead of the key ("approved by alice").
 */
export function parseApiKeyEntries(raw: string | undefined): { key: string; role: Role; name: string | null }[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const out: { key: string; role: Role; name: string | null }[] = [];
  for (const pair of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const parts = pair.split(':');
    let name: string | null = null;
    if (parts.length >= 3 && !isRole(parts.at(-1)) && isRole(parts.at(-2))) name = parts.pop()!;
    const role = parts.pop() ?? '';
    const key = parts.join(':');
    if (!key || !isRole(role) || (name !== null && !KEY_NAME.test(name))) {
      throw new Error(`THINKFLOW_API_KEYS: bad pair '${key ? pair.replace(key, '***') : pair}' (expected key:submitter|operator|admin, optionally :name with letters, digits, _.@-)`);
    }
    out.push({ key, role, name });
  }
  return out;
}

/** `key:role,key:role` → map; see parseApiKeyEntries. */
export function parseApiKeys(raw: string | undefined): ApiKeys | null {
  const entries = parseApiKeyEntries(raw);
  return entries ? new Map(entries.map((e) => [e.key, e.role])) : null;
}

/** Names given as `key:role:name` (keys without one are absent). */
export function parseApiKeyNames(raw: string | undefined): Map<string, string> {
  return new Map((parseApiKeyEntries(raw) ?? []).filter((e) => e.name !== null).map((e) => [e.key, e.name!]));
}

const list = (raw: string) => raw.split(',').map((s) => s.trim()).filter(Boolean);

/** An origin as browsers send it; anything else (a path, a wildcard) would silently never match. */
function exactOrigin(o: string): string {
  const u = URL.canParse(o) ? new URL(o) : null;
  if (!u || u.origin !== o || !/^https?:$/.test(u.protocol)) throw new Error(`invalid environment: THINKFLOW_CORS_ORIGINS: '${o}' is not an exact origin like https://ops.example:8443`);
  return o;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // `VAR=` (as compose files and .env files write it) means unset, not an empty value.
  const parsed = EnvSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid environment: ${issues}`);
  }
  const e = parsed.data;
  if (e.OPENAI_BASE_URL && !e.THINKFLOW_MODEL) {
    throw new Error('invalid environment: THINKFLOW_MODEL is unset but OPENAI_BASE_URL is set: name the model the endpoint should run (there is no default)');
  }
  return {
    port: e.PORT, host: e.HOST,
    redisUrl: e.REDIS_URL,
    role: e.THINKFLOW_ROLE,
    apiKeys: parseApiKeys(e.THINKFLOW_API_KEYS),
    apiKeyNames: parseApiKeyNames(e.THINKFLOW_API_KEYS),
    policyDir: e.THINKFLOW_POLICY_DIR,
    approvalTtlS: e.THINKFLOW_APPROVAL_TTL_S,
    redisPrefix: e.THINKFLOW_REDIS_PREFIX,
    maxJsonBytes: e.THINKFLOW_MAX_JSON_BYTES, maxCommandsBytes: e.THINKFLOW_MAX_COMMANDS_BYTES,
    maxUploadBytes: e.THINKFLOW_MAX_UPLOAD_MB * 1024 * 1024,
    egress: { promptWaitS: e.THINKFLOW_EGRESS_PROMPT_WAIT_S, maxConnections: e.THINKFLOW_EGRESS_MAX_CONNECTIONS },
    lockMs: e.THINKFLOW_LOCK_MS, stalledIntervalMs: e.THINKFLOW_STALLED_INTERVAL_MS, workerIdleMs: e.THINKFLOW_WORKER_IDLE_MS, runLingerMs: e.THINKFLOW_RUN_LINGER_MS,
    shutdownGraceS: e.THINKFLOW_SHUTDOWN_GRACE_S,
    recordBodyBytes: e.THINKFLOW_RECORD_BODY_BYTES, retentionS: e.THINKFLOW_RETENTION_S,
    sandboxPrefix: e.THINKFLOW_SANDBOX_PREFIX,
    model: { baseUrl: e.OPENAI_BASE_URL ?? null, apiKey: e.OPENAI_API_KEY ?? null, name: e.THINKFLOW_MODEL ?? null, idleMs: e.THINKFLOW_MODEL_IDLE_S * 1000 },
    sandboxImage: e.THINKFLOW_SANDBOX_IMAGE, executorChannel: e.THINKFLOW_EXECUTOR_CHANNEL, sandboxStartConcurrency: e.THINKFLOW_SANDBOX_START_CONCURRENCY,
    parser: { legacyTags: e.THINKFLOW_LEGACY_TAGS, maxBodyBytes: e.THINKFLOW_MAX_TAG_BODY_BYTES },
    eventsKeep: e.THINKFLOW_EVENTS_KEEP,
    logLevel: e.THINKFLOW_LOG_LEVEL,
    webhookSecret: e.THINKFLOW_WEBHOOK_SECRET ?? null,
    webhookAllow: e.THINKFLOW_WEBHOOK_ALLOW ?? null,
    web: { allowedHosts: list(e.THINKFLOW_ALLOWED_HOSTS).map((h) => h.toLowerCase()), corsOrigins: list(e.THINKFLOW_CORS_ORIGINS).map(exactOrigin) },
    runnerTtlS: e.THINKFLOW_RUNNER_TTL_S,
    replayScripts: e.THINKFLOW_REPLAY_SCRIPTS ?? null,
    workspaceQuotaMb: e.THINKFLOW_WORKSPACE_QUOTA_MB,
    workspace: { fs: e.THINKFLOW_WORKSPACE_FS, dir: e.THINKFLOW_WORKSPACE_DIR, inodes: e.THINKFLOW_WORKSPACE_INODES, spares: e.THINKFLOW_WORKSPACE_SPARES, warmPool: e.THINKFLOW_WARM_POOL },
    egressDir: e.THINKFLOW_EGRESS_DIR,
    caps: {
      maxSessionsPerKey: e.THINKFLOW_MAX_SESSIONS_PER_KEY, maxRunningPerKey: e.THINKFLOW_MAX_RUNNING_PER_KEY,
      maxStreamsPerKey: e.THINKFLOW_MAX_STREAMS_PER_KEY, maxTurnsPerKey: e.THINKFLOW_MAX_TURNS_PER_KEY,
    },
    maxCommandsPerTurn: e.THINKFLOW_MAX_COMMANDS_PER_TURN,
    storeBytesPerKey: e.THINKFLOW_STORE_BYTES_PER_KEY,
    http: {
      headersTimeoutMs: e.THINKFLOW_HEADERS_TIMEOUT_MS, requestTimeoutMs: e.THINKFLOW_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.THINKFLOW_KEEPALIVE_TIMEOUT_MS, maxConnectionsPerAddress: e.THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS,
    },
    sandboxIdleStopS: e.THINKFLOW_SANDBOX_IDLE_STOP_S, sandboxIdlePauseS: e.THINKFLOW_IDLE_PAUSE_S, sandboxPauseWith: e.THINKFLOW_PAUSE_WITH, sandboxReapIntervalS: e.THINKFLOW_SANDBOX_REAP_INTERVAL_S,
    preview: { maxWorkspaceBytes: e.THINKFLOW_PREVIEW_MAX_WORKSPACE_MB * 1024 * 1024, maxRunMs: e.THINKFLOW_PREVIEW_TIMEOUT_S * 1000, perProcess: e.THINKFLOW_PREVIEWS_PER_WORKER },
    sandboxCalls: {
      pickupMs: e.THINKFLOW_SANDBOX_CALL_PICKUP_MS, answerMs: e.THINKFLOW_SANDBOX_CALL_ANSWER_MS, stallMs: e.THINKFLOW_SANDBOX_CALL_STALL_MS,
      maxAnswerBytes: e.THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB * 1024 * 1024, callsPerWorker: e.THINKFLOW_SANDBOX_CALLS_PER_WORKER,
    },
    approvalDiff: { maxBytes: e.THINKFLOW_DIFF_MAX_BYTES, maxLines: e.THINKFLOW_DIFF_MAX_LINES, timeoutMs: e.THINKFLOW_DIFF_TIMEOUT_MS },
  };
}
