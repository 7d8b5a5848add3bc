import type { Grant } from '../policy/index.ts';
import type { Command } from '../protocol/index.ts';
import { blankRecord, recordFromHash, type LedgerRecord } from './ledger-record.ts';

// What a worker reads to run one command, whichever way it was read: by
// `Ledger.loadForExecution` (one pipelined round trip) or, for the next
// command of a run, by the same `runNext` script that named it (no round
// trip of its own). Not the turn's failure: `start` refuses atomically a
// command whose turn failed earlier.

export type ExecutionLoad = {
  record: LedgerRecord | null;
  /** the full command (absent once final and dropped) */
  command: Command | null;
  deleted: boolean;
  /** the session's `running_job` field, for Sessions.withRunningJob */
  runningJob: string | null;
  grants: Grant[];
};

/** A grants list entry: a command grant, or a network one. */
export type StoredGrant = Grant | { tool: 'network'; host: string; port: number };

/** The command grants; the session's network grants (`approve_for_session` of a connection) share the list. */
export function parseGrants(raw: string[]): Grant[] {
  return raw.map((g) => JSON.parse(g) as StoredGrant).filter((g): g is Grant => g.tool !== 'network');
}

export function executionLoad(index: number, h: Record<string, string>, deletedAt: string | null | undefined, runningJob: string | null | undefined, grants: string[]): ExecutionLoad {
  return {
    record: h.status ? recordFromHash(index, h, false) : null,
    command: h.cmd ? (JSON.parse(h.cmd) as Command) : null,
    deleted: deletedAt !== null && deletedAt !== undefined,
    runningJob: runningJob ?? null,
    grants: parseGrants(grants),
  };
}

/** A flat HGETALL reply (as a script returns it) as an object. */
export function hashOf(flat: string[]): Record<string, string> {
  const h: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) h[flat[i]!] = flat[i + 1]!;
  return h;
}

/**
 * A queued record that is the next step of the run lingering on the session's list (createRecord said `wake`): the
 * run's id (`run_owner`) and what running it needs, as runNext would read it once woken (run-linger.ts hands it over).
 */
export type RunHandover = { owner: string; index: number; load: () => ExecutionLoad };

/** The handover of a record just created: the record as stored and the command as sent, nothing read back. */
export function handoverOf(record: LedgerRecord, command: Command, owner: string, runningJob: string, grants: string[]): RunHandover {
  const stored = Object.assign(blankRecord(), record); // a copy: the run's changes stay its own
  return { owner, index: record.index, load: () => ({ record: stored, command, deleted: false, runningJob: runningJob || null, grants: parseGrants(grants) }) };
}
