import { z } from 'zod';
import { NetworkRecord } from './egress/network-record.ts';
import { GrantScope, MatchedRule } from '../policy/index.ts';
import { Command, ParseError, targetOf } from '../protocol/index.ts';
import { LedgerRecord, LedgerStatus } from './ledger-record.ts';

// The event log's one model: every event of a session's stream (the SSE
// `event:` names and `data:` fields of API.md), as a zod discriminated union
// on `type`. The ledger's events are written by the Lua scripts with the state
// change they describe; the others (files_seeded, the job runner's) by
// event-writer.ts. Every stored event carries `seq` (its stream position) and
// `index` (the ledger index of the command it is about; 0 when none).
// Field order matters: readers get the stored JSON as written, so the writers
// below keep the order the wire has always had.

/** An approval as events and the REST routes show it (POLICY.md §5). */
export const PublicApproval = z.object({
  token: z.string(),
  session_id: z.string(),
  job_id: z.string().nullable(),
  command_id: z.string(),
  turn: z.number().int(),
  tool: z.string(),
  target: z.string(),
  matched_rules: z.array(MatchedRule),
  justification: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
  status: z.string().optional(),
  decision: z.string().nullable().optional(),
  decided_by: z.string().nullable().optional(),
  reason: z.string().nullable().optional(),
  decided_at: z.string().nullable().optional(),
  /** What each scope of approve_for_session would grant (POLICY.md §7). */
  grant_options: z.array(z.object({ scope: GrantScope, covers: z.string().nullable(), unavailable: z.string().optional() })).optional(),
  /** The scope an approve_for_session answer chose. */
  grant_scope: GrantScope.optional(),
});
export type PublicApproval = z.infer<typeof PublicApproval>;

/** What command_queued/command_started carry: enough to show progress, without the body. */
export const CommandSummary = z.object({
  turn: z.number().int(), id: z.string(), tool: z.string(), status: z.string(), flow: z.string(), target: z.string(),
});
export type CommandSummary = z.infer<typeof CommandSummary>;

export function summaryOf(r: LedgerRecord): CommandSummary {
  return { turn: r.turn, id: r.id, tool: r.tool, status: r.status, flow: r.flow, target: targetOf(r) };
}

/** Fields every stored event has. */
const stored = {
  seq: z.number().int().positive(),
  index: z.number().int().nonnegative(),
  session_id: z.string(),
  job_id: z.string().nullable(),
  at: z.string(),
};
const event = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...stored, ...shape });

const turn = z.number().int().nonnegative();
/**
 * A parsed command; a native one carries the provider's tool-call id (`call_…`), not a tag's number.
 * Its bodies are cut like a ledger record's, with `<f>_size`, `<f>_sha256`, `<f>_truncated` for each body present.
 */
const bodyMeta = (f: string) => ({
  [`${f}_size`]: z.number().int().nonnegative().optional(), [`${f}_sha256`]: z.string().optional(), [`${f}_truncated`]: z.boolean().optional(),
});
const ParsedCommand = Command.extend({ id: z.string().min(1), ...bodyMeta('content'), ...bodyMeta('old_text'), ...bodyMeta('new_text') });
const text = { turn, text: z.string() };

/** The ledger's events, written by the Lua scripts (createRecord, transition). */
export const LEDGER_EVENTS = [
  event('command_queued', { command: CommandSummary }),
  event('approval_requested', { approval: PublicApproval }),
  event('approval_resolved', { approval: PublicApproval }),
  event('command_started', { command: CommandSummary }),
  event('command_finished', { record: LedgerRecord }),
] as const;

/** The job runner's events (API.md §Events); job_finished is written with the job's final view. */
export const JOB_EVENTS = [
  event('turn_started', { turn, api_call: z.number().int() }),
  // steering (POST /v1/jobs/:id/messages): the text joins the model's next user message; `interrupt` also stops the current stream
  event('message_added', { text: z.string(), interrupt: z.boolean() }),
  // pause/resume: while paused no model call and no command starts (the running one finishes)
  event('job_paused', {}),
  event('job_resumed', {}),
  event('reasoning_delta', text),
  event('text_delta', text),
  event('command_parsed', { turn, stream: z.enum(['reasoning', 'text', 'native']), command: ParsedCommand }),
  event('parse_error', { turn, stream: z.enum(['reasoning', 'text']), error: ParseError }),
  // outcome: how the turn ended (done, tools, failure, parse_error, result, …): the runner's word, shown as is
  event('turn_ended', { turn, api_call: z.number().int(), outcome: z.string() }),
  // a job's validator (`validate.cmd`), run when the model ends; `command_id` is its ledger id (flow `validator`)
  event('validation_started', { round: z.number().int().positive(), max_rounds: z.number().int().positive(), command_id: z.string(), cmd: z.string() }),
  event('validation_finished', {
    round: z.number().int().positive(), max_rounds: z.number().int().positive(), command_id: z.string(),
    passed: z.boolean(), status: LedgerStatus, exit_code: z.number().nullable(), error: z.string().nullable(),
  }),
  // the job's view is the jobs layer's schema (above this one): checked here for what the stream needs
  event('job_finished', { job: z.looseObject({ job_id: z.string(), session_id: z.string(), status: z.string() }) }),
] as const;

export const SessionEvent = z.discriminatedUnion('type', [
  ...LEDGER_EVENTS,
  ...JOB_EVENTS,
  event('files_seeded', { paths: z.array(z.object({ path: z.string(), bytes: z.number().int().nonnegative() })) }),
  // a connection through the session's egress proxy: decided, then finished with its bytes (egress/network-record.ts)
  event('network_connection', { record: NetworkRecord }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
export type SessionEventType = SessionEvent['type'];
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;
export const EVENT_TYPES = SessionEvent.options.map((o) => o.shape.type.value) as SessionEventType[];

export type LedgerEvent = z.infer<(typeof LEDGER_EVENTS)[number]>;
export type LedgerEventType = LedgerEvent['type'];
export type JobEvent = z.infer<(typeof JOB_EVENTS)[number]>;
export type JobEventType = JobEvent['type'];

/** What a writer supplies for an event: the log adds seq, index, session_id, job_id and at. */
export type EventBody<E extends SessionEvent = SessionEvent> =
  E extends unknown ? { type: E['type'] } & Omit<E, 'type' | 'seq' | 'index' | 'session_id' | 'job_id' | 'at'> : never;

/** What a job's runner writes: every job event but `job_finished` (jobs/ writes that with the job's final view). */
export type RunnerEvent = EventBody<Exclude<JobEvent, { type: 'job_finished' }>>;

/**
 * Sent to a client resuming before the oldest event kept (THINKFLOW_EVENTS_KEEP):
 * never stored, so it has no seq; the SSE data is everything but `type`.
 */
export const GapEvent = z.object({
  type: z.literal('gap'),
  first_seq: z.number().int().positive(),
  after: z.number().int().nonnegative(),
  session_id: z.string(),
  job_id: z.string().optional(),
  at: z.string(),
});
export type GapEvent = z.infer<typeof GapEvent>;

/** Everything an event stream of API.md can carry. */
export const StreamEvent = z.discriminatedUnion('type', [...SessionEvent.options, GapEvent]);
export type StreamEvent = z.infer<typeof StreamEvent>;
