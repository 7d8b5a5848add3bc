// Every Redis key and BullMQ queue name the services touch is built here (the
// jobs module's too), so a prefix change (tests use a unique one per file)
// isolates everything at once. Redis Cluster: every key a script or MULTI
// touches shares one hash tag, so it is one slot —
//   `{sid}`      a session's keys and its BullMQ queue (`${prefix}:q:{sid}:…`);
//   `{o:owner}`  an API key's caps, budget and Idempotency-Keys;
//   `{j:job}`    a job's hash, deliveries and steering messages.
// The global indexes (sessions, busy, pending and decided approvals, an approval's index
// entry, the jobs list, the worker processes' heartbeats) have no tag: no script or MULTI touches them with
// anything else; they are written by their own command next to the script
// (README "Redis Cluster"). test/unit/pipeline/key-slots.test.ts checks it.

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Session ids and prefixes must not contain `:` or braces (BullMQ forbids `:` in names). */
export function assertName(kind: string, value: string): string {
  if (!NAME.test(value)) throw new Error(`invalid ${kind} '${value}': expected ${NAME}`);
  return value;
}

export type Keys = ReturnType<typeof createKeys>;

export function createKeys(prefix = 'tf') {
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(prefix)) throw new Error(`invalid redis prefix '${prefix}'`);
  const s = (sid: string) => `${prefix}:{${assertName('session id', sid)}}`;
  return {
    prefix,
    /** BullMQ's own prefix: its keys become `${prefix}:q:{sid}:wait` etc. */
    bullPrefix: `${prefix}:q`,
    queueName: (sid: string) => `{${assertName('session id', sid)}}`,
    sessionFromQueue: (name: string) => name.slice(1, -1),
    /** BullMQ's meta hash of the session's queue (field `paused`; BullMQ's own layout `${bullPrefix}:${queueName}:meta`) */
    queueMeta: (sid: string) => `${prefix}:q:{${assertName('session id', sid)}}:meta`,
    /** hash: owner, project, approval, policy, created_at, deleted_at */
    sessionMeta: (sid: string) => `${s(sid)}:meta`,
    /** zset of every session (score = creation ms) */
    sessions: () => `${prefix}:sessions`,
    /** zset of sessions that had non-final commands at some point; pruned by the worker pool */
    busy: () => `${prefix}:busy`,
    /** pub/sub channel: a session got work (payload: session id) */
    wakeChannel: () => `${prefix}:wake`,
    /** bytes the session's records and events hold in Redis, charged by the scripts that write them (storage-budget.ts) */
    sessionBytes: (sid: string) => `${s(sid)}:bytes`,
    ledgerCounter: (sid: string) => `${s(sid)}:ledger:n`, ledgerIds: (sid: string) => `${s(sid)}:ledger:ids`,
    /** the records' common prefix: declared in a script's KEYS, the script appends the index (same slot) */
    recordPrefix: (sid: string) => `${s(sid)}:rec:`,
    record: (sid: string, n: number) => `${s(sid)}:rec:${n}`,
    /** count of records not yet final */
    open: (sid: string) => `${s(sid)}:open`,
    /** list of the indexes of the records created `queued`, in ledger order: what the session's run job works through (queues.ts) */
    runList: (sid: string) => `${s(sid)}:run`,
    turnCounter: (sid: string) => `${s(sid)}:turn`, turnState: (sid: string, turn: number) => `${s(sid)}:turn:${turn}`,
    turnCommands: (sid: string, turn: number) => `${s(sid)}:turn:${turn}:cmds`,
    grants: (sid: string) => `${s(sid)}:grants`,
    networkCounter: (sid: string) => `${s(sid)}:net:n`, networkLog: (sid: string) => `${s(sid)}:net`, // egress/network-log.ts
    eventSeq: (sid: string) => `${s(sid)}:events:seq`, events: (sid: string) => `${s(sid)}:events`,
    eventChannel: (sid: string) => `${s(sid)}:events:ch`,
    approval: (sid: string, token: string) => `${s(sid)}:approval:${token}`,
    /** string: the operator card's derived view of a pending approval (diff, explanation), kept until it expires */
    approvalView: (sid: string, token: string) => `${s(sid)}:approval:${token}:view`,
    /** string (SET NX PX): a preview of the approval is running (approval-preview.ts: one at a time per approval) */
    approvalPreview: (sid: string, token: string) => `${s(sid)}:approval:${token}:preview`,
    /** string: the session id of an approval token, so an answer by token finds its session; expires with the approval */
    approvalIndex: (token: string) => `${prefix}:approvals:index:${token}`,
    /** zset token -> expires_at ms, the pending ones only */
    approvalsPending: () => `${prefix}:approvals:pending`,
    /** zset token -> created_at ms of the answered and expired ones (approval-history.ts): bounded in age and count, trimmed as it is written and read */
    approvalsDecided: () => `${prefix}:approvals:decided`,
    approvalChannel: () => `${prefix}:approvals:ch`,
    ...ownerKeys(prefix),
    ...jobKeys(prefix),
    ...processKeys(prefix),
    /**
     * Every key of one session outside BullMQ, from its counters (no SCAN):
     * `records` = the ledger counter, `turns` = the turn counter, `tokens` its
     * approvals. The meta hash comes first (see scripts/lib/followTtl.lua).
     */
    sessionKeys: (sid: string, n: SessionCounts): string[] => sessionKeysOf(s(sid), n),
    /** every key pattern of this prefix (tests delete them with SCAN) */
    all: () => `${prefix}:*`,
  };
}

/** Keys of the processes themselves: worker liveness and the key layout's migration (global, untagged). */
function processKeys(prefix: string) {
  return {
    /** set of worker process ids that beat (worker-liveness.ts); a survivor removes a dead one */
    workers: () => `${prefix}:workers`,
    /** string: a worker process's heartbeat (`host:pid`), PX = its TTL; gone = the process is dead */
    workerBeat: (id: string) => `${prefix}:worker:${assertName('worker id', id)}`,
    /** list of warm sandboxes' session ids (`<sid> <worker process id>`): a new session takes one with LPOP (warm-pool.ts) */
    warmIds: () => `${prefix}:warm`,
    /** string: the key layout this prefix's data is in (migrate-keys.ts; absent = before 2) */
    schema: () => `${prefix}:schema`,
    /** string, expiring: held by the one process migrating the layout (SET NX PX) */
    schemaLock: () => `${prefix}:schema:lock`,
  };
}

/** An API key's keys: one hash tag `{o:<owner>}`, so its scripts and MULTIs are one slot. */
function ownerKeys(prefix: string) {
  const o = (owner: string) => `${prefix}:owner:{o:${owner}}`;
  return {
    /** set of an API key's open sessions (plus short-lived `pending:` reservations) */
    ownerSessions: (owner: string) => `${o(owner)}:sessions`,
    /** zset of an API key's deleted sessions whose keys still exist, score = their expiry ms (storage-budget.ts) */
    ownerRetired: (owner: string) => `${o(owner)}:retired`,
    /** hash: bytes of each of those sessions, and their sum in field `~total` */
    ownerRetiredBytes: (owner: string) => `${o(owner)}:retired:bytes`,
    /** string: an API key's `Idempotency-Key` (`keyHash`: sha256 hex of it), its request's fingerprint and answer (idempotency.ts) */
    idempotency: (owner: string, keyHash: string) => `${o(owner)}:idem:${keyHash}`,
    /** zset of an API key's sessions with a live container, score = last use ms */
    ownerLive: (owner: string) => `${o(owner)}:live`,
  };
}

/** A job's keys (tag `{j:<id>}`), the jobs list and the runners' heartbeats (jobs/). */
function jobKeys(prefix: string) {
  const j = (id: string) => `${prefix}:job:{j:${id}}`;
  return {
    /** hash of one job: `data` (the JobView JSON), `owner`, `cancel`, `pause`, `runner`, `from_seq` (jobs/job-store.ts) */
    job: (id: string) => j(id),
    /** list: a job's webhook delivery attempts */
    jobDeliveries: (id: string) => `${j(id)}:webhook-deliveries`,
    /** list: steering messages not yet taken by a model call (jobs/job-control.ts) */
    jobMessages: (id: string) => `${j(id)}:messages`,
    /** zset of every job by creation ms (global index; entries whose job expired are pruned as jobs are made) */
    jobs: () => `${prefix}:jobs`,
    /** pub/sub: a job's view was written (payload: job id), for live job lists */
    jobChanges: () => `${prefix}:jobs:ch`,
    /** string: a job runner process's heartbeat (expires after THINKFLOW_RUNNER_TTL_S) */
    runner: (id: string) => `${prefix}:runner:${id}`,
  };
}

/**
 * The keys of sandbox calls (sandbox-calls/README.md): a call's pipes are
 * its session's (hash tag), the calls list and the mailboxes are the prefix's.
 */
export function sandboxCallKeys(prefix: string) {
  return {
    /** list: calls waiting for any worker, JSON; LPUSH by callers, BRPOP by workers */
    calls: () => `${prefix}:sbx:calls`,
    /** pub/sub channel: wake-ups for one process's calls (payload `<call id>:<pipe>`) */
    mailbox: (process: string) => `${prefix}:sbx:mb:${assertName('mailbox', process)}`,
    /** one call's frames, expiring: `down` (worker → caller), `up` (caller → worker), `end` (flag: stop writing) */
    pipe: (sid: string, call: string, part: 'down' | 'up' | 'end') => `${prefix}:{${assertName('session id', sid)}}:sbx:${assertName('call id', call)}:${part}`,
  };
}
export type SandboxCallKeys = ReturnType<typeof sandboxCallKeys>;

/**
 * The layout before 2 (commit 974fb10 tagged them): a job's keys were
 * `${prefix}:job:<id>[:webhook-deliveries|:messages]`, an API key's
 * `${prefix}:owner:<owner>:<sessions|retired|retired:bytes|live|idem:<hash>>`.
 * `match` is a SCAN pattern covering both (and more: `renamed` decides);
 * `renamed` gives an old key's new name, null for anything else (a tagged
 * key has a brace where the id was, which the id patterns refuse).
 */
export function legacyKeys(prefix: string) {
  const k = createKeys(prefix);
  const job = new RegExp(`^${esc(prefix)}:job:(job_[A-Za-z0-9]{1,64})(:webhook-deliveries|:messages)?$`);
  const owner = new RegExp(`^${esc(prefix)}:owner:([^{}:]+):(sessions|retired|retired:bytes|live|idem:([0-9a-f]{1,128}))$`);
  const ownerKey = { sessions: k.ownerSessions, retired: k.ownerRetired, 'retired:bytes': k.ownerRetiredBytes, live: k.ownerLive } as const;
  return {
    match: `${prefix}:[jo]*`,
    renamed(key: string): string | null {
      const j = job.exec(key);
      if (j) return j[2] === ':webhook-deliveries' ? k.jobDeliveries(j[1]!) : j[2] === ':messages' ? k.jobMessages(j[1]!) : k.job(j[1]!);
      const o = owner.exec(key);
      if (!o) return null;
      return o[3] !== undefined ? k.idempotency(o[1]!, o[3]) : ownerKey[o[2] as keyof typeof ownerKey](o[1]!);
    },
  };
}

const esc = (s: string) => s.replace(/[.\-]/g, '\\$&');

type SessionCounts = { records: number; turns: number; tokens: string[] };

function sessionKeysOf(base: string, n: SessionCounts): string[] {
  const fixed = ['meta', 'bytes', 'ledger:n', 'ledger:ids', 'open', 'run', 'turn', 'grants', 'net:n', 'net', 'events:seq', 'events'].map((k) => `${base}:${k}`);
  const records = Array.from({ length: n.records }, (_, i) => `${base}:rec:${i + 1}`);
  const turns = Array.from({ length: n.turns }, (_, i) => [`${base}:turn:${i + 1}`, `${base}:turn:${i + 1}:cmds`]).flat();
  return [...fixed, ...records, ...turns, ...n.tokens.map((t) => `${base}:approval:${t}`)];
}
