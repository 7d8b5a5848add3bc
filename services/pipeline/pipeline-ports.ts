import type { CommandLifecycle } from './command-lifecycle.ts';
import type { Ledger } from './ledger.ts';
import type { OwnerCapLimits, OwnerCaps } from './owner-caps.ts';
import type { Sessions } from './sessions.ts';
import type { Redis } from 'ioredis';
import type { ParserOptions } from '../protocol/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineMetrics } from './metrics.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { PipelineRedis } from './redis.ts';
import type { Sandboxes } from './sandboxes.ts';
import type { LedgerStatus } from './ledger-record.ts';

// The Pipeline's ports in (PipelineDeps) and out. Out: its ledger, sessions, status writer and caps
// are its own; callers get these views of them instead, each no wider than its
// readers need. The worker side is for the composition root (main/runtime.ts).

/** The ledger as the API reads it (records, a card's raw bodies, the recent states); never a write. */
export type LedgerReads = Pick<Ledger, 'get' | 'tail' | 'rawBase' | 'rawCommand' | 'lastIndexes' | 'states' | 'openCount' | 'grants'>;
/** A key's live-container slots (owner-caps.ts), claimed before a session gets a container and released when it does not. */
export type LiveSlots = Pick<OwnerCaps, 'claimLive' | 'releaseLive'>;
/**
 * What a worker process's Processor and EgressGate get from the pipeline, and only the composition root asks for:
 * the status writer, the session reads, the live-slot touch, and the ledger reads of the egress gate.
 */
export type WorkerSide = {
  lifecycle: CommandLifecycle;
  sessions: Pick<Sessions, 'get' | 'withRunningJob'>;
  caps: Pick<OwnerCaps, 'touchLive'>;
  ledger: Pick<Ledger, 'networkGrants' | 'tail'>;
};

export type CommandHandle = { sessionId: string; turn: number; id: string; index: number; status: LedgerStatus };

export type PipelineDeps = {
  redis: PipelineRedis;
  /** the process's subscriber connection (owned by the caller, shared with the worker pool) */
  subscriber: Redis;
  /** BullMQ's connection (queues.ts), owned by the caller; omitted = `redis` */
  queueRedis?: Redis;
  keys: Keys;
  sandboxes: Sandboxes;
  gate: PolicyGate;
  metrics: PipelineMetrics;
  /** THINKFLOW_RECORD_BODY_BYTES: a command's bodies kept in its record and events */
  bodyBytes: number;
  /** THINKFLOW_RETENTION_S: a deleted session's keys expire this long after DELETE */
  retentionS: number;
  /** per-key caps; omitted = no caps (internal callers, benchmarks) */
  ownerCaps?: OwnerCapLimits;
  /** events kept per session stream; 0 = all, while the session exists (THINKFLOW_EVENTS_KEEP) */
  eventsKeep?: number;
  /** how the session's tf-* text is parsed (THINKFLOW_LEGACY_TAGS, THINKFLOW_MAX_TAG_BODY_BYTES) */
  parser?: ParserOptions;
  /** commands in one turn, REST or model (THINKFLOW_MAX_COMMANDS_PER_TURN); omitted = no cap */
  maxCommandsPerTurn?: number;
  /** Redis bytes per key (THINKFLOW_STORE_BYTES_PER_KEY, storage-budget.ts); omitted = no budget */
  storeBytesPerKey?: number;
};

/** A file written into a new session's workspace before any command (not a command: never in the ledger). */
export type SeededFile = { path: string; bytes: number };
