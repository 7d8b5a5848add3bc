import { PolicyLoosensError, type ApprovalMode } from '../policy/index.ts';
import type { Command, CommandFlow, ParserOptions } from '../protocol/index.ts';
import { log, withIds } from '../log/index.ts';
import { queueOverview, type QueueRow } from './queue-overview.ts';
import { Approvals } from './approvals.ts';
import { CommandLifecycle } from './command-lifecycle.ts';
import { PipelineError } from './errors.ts';
import { EventHub } from './event-reader.ts';
import { EventWriter } from './event-writer.ts';
import { resetBaseline } from './baseline.ts';
import type { Sandboxes } from './sandboxes.ts';
import { OwnerCaps } from './owner-caps.ts';
import { Ledger } from './ledger.ts';
import { SessionRetention } from './retention.ts';
import { StorageBudget } from './storage-budget.ts';
import type { LedgerRecord } from './ledger-record.ts';
import type { RunHandover } from './execution-load.ts';
import { awaitFinal, FinishWatch } from './finish-watch.ts';
import { deleteSession } from './session-delete.ts';
import type { PolicyGate } from './policy-gate.ts';
import { SessionQueues } from './queues.ts';
import { checkValidator } from './validator-check.ts';
import { SessionClaims } from './session-claims.ts';
import { checkSeeds } from './seed-check.ts';
import { withNetworkRecords, type LedgerEntry } from './egress/ledger-view.ts';
import { NetworkLog } from './egress/network-log.ts';
import { recordCommand, type EnqueueDeps } from './enqueue.ts';
import { newSessionId, Sessions, type SessionMeta, type SessionState } from './sessions.ts';
import { wakeIfPaused } from './pause-marks.ts';
import { openRestTurn, type OpenedTurn } from './turn-open.ts';
import { giveBackWarm, takeWarm } from './warm-pool.ts';
import type { LedgerReads, LiveSlots, PipelineDeps, SeededFile, WorkerSide, CommandHandle } from './pipeline-ports.ts';

export type { CommandHandle, LedgerReads, LiveSlots, PipelineDeps, SeededFile, WorkerSide } from './pipeline-ports.ts';

// The pipeline as callers see it (REST routes now, the model-driven job runner later): sessions,
// enqueue in stream order, await one command or a whole turn, the ledger and its injected marks.
// Execution itself happens in the WorkerPool, in whichever process holds the session's queue.

function seedCommand(path: string, content: string): Command {
  return { id: 'seed', tool: 'write', path, content, allow_empty: true, need_result: false };
}

export class Pipeline {
  readonly #ledger: Ledger;
  readonly #lifecycle: CommandLifecycle;
  readonly #sessions: Sessions;
  /** read-only views of the ledger (LedgerReads): the API's cards, the tests */
  readonly records: LedgerReads;
  readonly live: LiveSlots;
  readonly approvals: Approvals;
  readonly queues: SessionQueues;
  readonly hub: EventHub;
  /** the session event stream's one writer (files_seeded here; the job runner's events) */
  readonly events: EventWriter;
  readonly #caps: OwnerCaps;
  readonly retention: SessionRetention;
  readonly storage: StorageBudget;
  readonly claims: SessionClaims; // one upload or one job at a time per session
  /** the session's network records (POLICY.md §8; egress/egress-gate.ts writes them) */
  readonly network: NetworkLog;
  readonly #d: PipelineDeps;
  readonly #enqueueDeps: EnqueueDeps;
  /** per-session chain: one process enqueues a session's commands strictly one after the other */
  readonly #chains = new Map<string, Promise<unknown>>();
  #closing: Promise<void> | null = null;
  #wakeHere: ((sid: string, step?: RunHandover) => boolean) | null = null;

  constructor(deps: PipelineDeps) {
    this.#d = deps;
    this.#ledger = new Ledger(deps.redis, deps.keys, { bodyBytes: deps.bodyBytes, eventsKeep: deps.eventsKeep ?? 0 });
    this.#lifecycle = new CommandLifecycle({ ledger: this.#ledger, metrics: deps.metrics, sandboxes: deps.sandboxes });
    this.#sessions = new Sessions(deps.redis, deps.keys);
    this.approvals = new Approvals(deps.redis, deps.keys);
    this.queues = new SessionQueues(deps.redis, deps.keys, deps.queueRedis);
    this.hub = new EventHub(deps.subscriber, deps.keys);
    this.events = new EventWriter(deps.redis, deps.keys, deps.eventsKeep ?? 0, deps.bodyBytes);
    this.retention = new SessionRetention(deps.redis, deps.keys, this.queues, deps.retentionS);
    this.storage = new StorageBudget(deps.redis, deps.keys, deps.storeBytesPerKey ?? Infinity);
    this.claims = new SessionClaims(deps.redis, deps.keys);
    this.network = new NetworkLog(deps.redis, deps.keys);
    this.#caps = new OwnerCaps(deps.redis, deps.keys, deps.ownerCaps ?? { maxSessions: Infinity, maxRunning: Infinity, liveWindowMs: 0 });
    this.records = this.#ledger;
    this.#enqueueDeps = {
      redis: deps.redis, keys: deps.keys, sessions: this.#sessions, lifecycle: this.#lifecycle, gate: deps.gate, queues: this.queues,
      wakeHere: (sid, step) => this.#wakeHere?.(sid, step) ?? false,
    };
    this.live = this.#caps;
  }

  /** For the composition root only: this process's worker pool wakes its own lingering runs (enqueue.ts wakeRun). */
  wakeRunsWith(wakeHere: (sid: string, step?: RunHandover) => boolean): void { this.#wakeHere = wakeHere; }

  /** For the composition root only: what a worker process's Processor and EgressGate are built with. */
  workerSide(): WorkerSide {
    return { lifecycle: this.#lifecycle, sessions: this.#sessions, caps: this.#caps, ledger: this.#ledger };
  }

  get sandboxes(): Sandboxes { return this.#d.sandboxes; }
  get gate(): PolicyGate { return this.#d.gate; }
  get eventsKeep(): number { return this.#d.eventsKeep ?? 0; }
  get bodyBytes(): number { return this.#d.bodyBytes; }
  get retentionS(): number { return this.#d.retentionS; }
  get parserOptions(): ParserOptions { return this.#d.parser ?? {}; }
  get maxCommandsPerTurn(): number { return this.#d.maxCommandsPerTurn ?? Infinity; }

  /** `files` (to be seeded later with seedFiles) are checked against the policy here, before anything exists. */
  async createSession(input: {
    owner: string | null; project?: string | null; approval?: ApprovalMode; policy?: unknown; jobId?: string | null; sessionId?: string;
    /** The policy comes from a submitter key: it may only tighten (POLICY.md §7). */
    tightenOnly?: boolean;
    files?: Record<string, string>;
    /** A job's validator: `invalid_validator` if the session's policy would never let it run. */ validator?: Command;
  }): Promise<SessionMeta> {
    try {
      this.#d.gate.validateSession(input.project ?? null, input.policy ?? null, input.tightenOnly ?? false);
    } catch (err) {
      if (err instanceof PolicyLoosensError) throw new PipelineError('policy_loosens', err.message, { reason: err.message, ...err.rule });
      throw new PipelineError('invalid_policy', (err as Error).message, { reason: (err as Error).message });
    }
    const fields = {
      session_id: input.sessionId ?? newSessionId(),
      owner: input.owner, project: input.project ?? null, approval: input.approval ?? 'never',
      policy: input.policy ?? null, job_id: input.jobId ?? null,
    };
    const draft = { ...fields, created_at: '', deleted_at: null };
    if (input.files) checkSeeds(this.#d.gate, draft, input.files);
    if (input.validator) checkValidator(this.#d.gate, draft, input.validator);
    await this.storage.assert(input.owner);
    const slot = await this.#caps.reserveSession(input.owner);
    let meta: SessionMeta;
    try {
      meta = await this.#sessions.create(fields);
    } catch (err) {
      await slot.cancel();
      throw err;
    }
    // Independent writes, sent together: a new session is on the path of every job's first model call. Its queue's
    // concurrency is set meanwhile, not waited for: the run of its first command waits for it (SessionQueues.startRun).
    this.queues.configure(meta.session_id).catch((err: unknown) => withIds({ session_id: meta.session_id }).warn({ err }, 'the new session\'s queue was not configured ahead; its first command does it'));
    await Promise.all([this.storage.chargeSession(meta.session_id), slot.commit(meta.session_id)]);
    return meta;
  }

  /**
   * Writes the files into the workspace through the sandbox (not commands: never in the ledger), makes that the
   * workspace's baseline (baseline.ts) and emits `files_seeded {paths:[{path, bytes}]}`. Before the first command.
   */
  async seedFiles(sid: string, files: Record<string, string>, signal?: AbortSignal): Promise<SeededFile[]> {
    const meta = await this.session(sid);
    const seeded: SeededFile[] = [];
    for (const [path, content] of Object.entries(files)) {
      const r = await this.#d.sandboxes.execute(sid, seedCommand(path, content), { signal });
      if (!r.ok) throw new PipelineError('seed_failed', `${path}: ${r.error ?? 'failed'}`, { path, error: r.error ?? null, error_code: r.error_code ?? null });
      seeded.push({ path, bytes: Buffer.byteLength(content, 'utf8') });
    }
    await resetBaseline(this.#d.sandboxes, sid);
    await this.events.append(sid, meta.job_id, { type: 'files_seeded', paths: seeded });
    return seeded;
  }

  /** The session (deleted ones too, with `deleted_at`), read fresh unless `fresh` is false (the cached meta, its running job read); null when there is none. */
  /**
   * An id for a new session: a warm sandbox's when a worker has one ready (warm-pool.ts), else a fresh one. A warm
   * one comes with a running container, so it takes a live slot of the key (the cap of sessions with one) like `live`
   * asks for (seeded files, a job); when the key has none left it goes back and the session starts cold, as before.
   * `undo`: the create failed; the slot is released and a warm id given back.
   */
  async takeSessionId(owner: string | null, live: boolean): Promise<{ id: string; undo: () => Promise<void> }> {
    const { redis, keys } = this.#d;
    const warm = await takeWarm(redis, keys);
    if (warm) {
      const claimed = await this.live.claimLive(owner, warm.sid).then(() => null, (err: unknown) => err);
      if (!claimed) return { id: warm.sid, undo: async () => { await this.live.releaseLive(owner, warm.sid); await giveBackWarm(redis, keys, warm); } };
      await giveBackWarm(redis, keys, warm);
      if (live) throw claimed;
    }
    const id = newSessionId();
    if (live) await this.live.claimLive(owner, id);
    return { id, undo: async () => { if (live) await this.live.releaseLive(owner, id); } };
  }

  sessionMeta(sid: string, fresh = true): Promise<SessionState | null> { return this.#sessions.get(sid, fresh); }

  isDeleted(sid: string): Promise<boolean> { return this.#sessions.isDeleted(sid); }

  /** A command is coming for the session (a REST turn, a model call): thaws its container ahead of it if a worker paused it (pause-marks.ts). `known`: the session as just read. */
  prewake(sid: string, known?: SessionState): void { wakeIfPaused(this.#d.redis, this.#d.keys, sid, known); }

  async session(sid: string): Promise<SessionMeta> {
    const meta = await this.#sessions.get(sid, true);
    if (!meta) throw new PipelineError('session_not_found', `session ${sid} not found`);
    return meta;
  }

  /**
   * Opens a REST turn in one round trip (turn-open.ts): the session's state, its turn number, the key's live slot and
   * storage budget, and the watch of the turn's finishes. `owner`: the session's key, as the caller knows it.
   * @throws PipelineError session_not_found, session_deleted, session_busy (an upload), too_many, storage_quota_exceeded
   */
  openTurn(sid: string, owner: string | null): Promise<OpenedTurn> {
    const { redis, keys } = this.#d;
    return openRestTurn({ redis, keys, sessions: this.#sessions, live: this.#caps, storage: this.storage, watch: (s) => this.watchFinished(s) }, sid, owner);
  }

  /** The session's immutable part as this process last read it (its owner, to open a turn without reading it first); null when not known here. */
  rememberedSession(sid: string): SessionMeta | null { return this.#sessions.remembered(sid); }

  /** A new turn number for the session (one POST, or one model call); refused once its key is over its storage budget. `known`: its meta, read moments ago by the caller. */
  async nextTurn(sid: string, known?: SessionMeta): Promise<number> {
    // A session's owner never changes: the one this process remembers serves (no read, no schema check of its policy).
    await this.storage.assert((known ?? this.#sessions.remembered(sid) ?? (await this.session(sid))).owner);
    return this.#d.redis.incr(this.#d.keys.turnCounter(sid));
  }

  /**
   * Records the command (`queued` before it is enqueued), or records it final
   * at once: `forbidden` by policy or by approval mode `never`, `skipped`
   * when its turn already failed. Calls for one session are serialized here so
   * ledger order equals queue order. `parsedAt`: when the command's tag was parsed (the record's timings);
   * `precedingText`: what the model said before it, kept for an approval's context (approval-context.ts).
   */
  enqueue(sid: string, turn: number, command: Command, flow: CommandFlow, parsedAt?: Date, precedingText?: string): Promise<CommandHandle> {
    const prev = this.#chains.get(sid) ?? Promise.resolve();
    // The previous call's failure is its caller's (it got the rejection); here it only must not break the chain.
    const next = prev.then(() => undefined, () => undefined).then(() => recordCommand(this.#enqueueDeps, { sid, turn, command, flow, parsedAt, precedingText }));
    this.#chains.set(sid, next);
    const forget = () => { if (this.#chains.get(sid) === next) this.#chains.delete(sid); };
    next.then(forget, forget);
    return next;
  }

  /** A parse error (or any failure without a record) fails the turn from here on. */
  failTurn(sid: string, turn: number, label: string): Promise<void> {
    return this.#lifecycle.failTurn(sid, turn, label);
  }

  async awaitResult(handle: CommandHandle, signal?: AbortSignal): Promise<LedgerRecord> {
    const [rec] = await this.awaitAll(handle.sessionId, [handle.index], signal);
    return rec!;
  }

  /** Every command of the turn final (PROTOCOL.md §5.5), in ledger order. `indexes`: the turn's, known to a caller that enqueued them all (no read). */
  async drainTurn(sid: string, turn: number, signal?: AbortSignal, watch?: FinishWatch, indexes?: number[]): Promise<LedgerRecord[]> {
    return this.awaitAll(sid, indexes ? [...indexes].sort((a, b) => a - b) : await this.#ledger.turnIndexes(sid, turn), signal, watch);
  }

  /**
   * Waits until every given record is final (finish-watch.ts). `watch`: one
   * opened with watchFinished before these commands were enqueued.
   */
  awaitAll(sid: string, indexes: number[], signal?: AbortSignal, watch?: FinishWatch): Promise<LedgerRecord[]> {
    return awaitFinal({ ledger: this.#ledger, hub: this.hub }, sid, indexes, signal, watch);
  }

  /** Sees every command of the session that finishes from now on (close it when done). */
  watchFinished(sid: string): Promise<FinishWatch> {
    return FinishWatch.open(this.hub, sid);
  }

  /** The session's records for this service's own use (a job's counts, ids and feedback): unchecked; GET …/ledger checks. */
  entries(sid: string): Promise<LedgerRecord[]> { return this.#ledger.list(sid, false); }
  /** The ledger as GET …/ledger shows it: the command records with the session's network records in place. */
  async ledgerEntries(sid: string): Promise<LedgerEntry[]> { return withNetworkRecords(await this.#ledger.list(sid), await this.network.list(sid)); }
  uninjected(sid: string): Promise<LedgerRecord[]> { return this.#ledger.uninjected(sid); }
  markInjected(sid: string, indexes: number[]): Promise<void> { return this.#ledger.markInjected(sid, indexes); }

  /** The sessions with work, busiest first (operators' `/admin/queues`). */
  queueOverview(limit: number): Promise<QueueRow[]> {
    return queueOverview({ redis: this.#d.redis, keys: this.#d.keys, queues: this.queues, sessions: this.#sessions }, limit);
  }

  /** See `deleteSession` in session-delete.ts. */
  async deleteSession(sid: string): Promise<void> {
    const meta = await this.session(sid);
    await deleteSession({
      sessions: this.#sessions, ledger: this.#ledger, lifecycle: this.#lifecycle, approvals: this.approvals,
      sandboxes: this.#d.sandboxes, caps: this.#caps, retention: this.retention, storage: this.storage,
    }, sid, meta.owner);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#chains.values()]);
      try {
        await this.queues.close();
      } catch (err) {
        log().warn({ err }, 'closing the session queues failed; closing the rest anyway');
      }
      this.hub.close();
    })();
    return this.#closing;
  }
}
