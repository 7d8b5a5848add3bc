import { z } from 'zod';
import { Decision, MatchedRule } from '../../policy/index.ts';
import { LedgerApproval, Timings } from '../ledger-record.ts';

// A network ledger record (POLICY.md §8, API.md additions 2026-12-01): one
// per connection a command asked the session's egress proxy for, with the
// policy's decision, the approval when a person was asked, and what went
// through. It sits in the session's ledger next to the command records
// (`tool: "network"`), so a refusal and its rule are seen where the command is.

export const NETWORK_STATUSES = ['awaiting_approval', 'running', 'succeeded', 'failed', 'forbidden', 'rejected'] as const;
export const NetworkStatus = z.enum(NETWORK_STATUSES);
export type NetworkStatus = z.infer<typeof NetworkStatus>;

export const NetworkRecord = z.object({
  session: z.string(),
  /** `net-<n>`, numbered per session */
  id: z.string(),
  tool: z.literal('network'),
  /** `host:port` as the command asked for it (`[v6]:port` for IPv6) */
  target: z.string(),
  host: z.string(),
  port: z.number().int(),
  job_id: z.string().nullable(),
  /** the command that was running in the session when it connected (null between commands) */
  command_id: z.string().nullable(),
  /** that command's ledger index (ids repeat across turns) */
  command_index: z.number().int().nullable(),
  decision: Decision,
  matched_rules: z.array(MatchedRule),
  /** the strictest matched rule, null when a default decided */
  matched_rule: z.string().nullable(),
  policy_reason: z.string(),
  status: NetworkStatus,
  approval: LedgerApproval.nullable(),
  /** the address that was dialled (after the name was resolved once and checked) */
  address: z.string().nullable(),
  bytes_in: z.number().int().nonnegative(),
  bytes_out: z.number().int().nonnegative(),
  duration_ms: z.number().nonnegative().nullable(),
  error: z.string().nullable(),
  enqueued_at: z.string(),
  finished_at: z.string().nullable(),
  /** as a command record's: decided and queued when asked for, started when dialled, finished when closed or refused */
  timings: Timings,
});
export type NetworkRecord = z.infer<typeof NetworkRecord>;

/** A network record as stored; those written before timings get them from their timestamps. */
export function withTimings(r: Omit<NetworkRecord, 'timings'> & { timings?: Timings }): NetworkRecord {
  if (r.timings) return r as NetworkRecord;
  const timings: Timings = { admitted_at: r.enqueued_at, queued_at: r.enqueued_at };
  if (r.finished_at) timings.finished_at = r.finished_at;
  return { ...r, timings };
}
