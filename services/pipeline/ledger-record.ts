import { z } from 'zod';
import { Decision, MatchedRule } from '../policy/index.ts';
import { CommandFlow, ToolName, toolOf, type Command } from '../protocol/index.ts';
import { boundBodies } from './record-body.ts';

// The ledger record of PROTOCOL.md §6, its zod schema, and the pure functions
// that build it from a command and render it from the Redis hash. No I/O here.

export const LEDGER_STATUSES = [
  'queued', 'awaiting_approval', 'running',
  'succeeded', 'failed', 'skipped', 'forbidden', 'rejected', 'interrupted',
] as const;
export const LedgerStatus = z.enum(LEDGER_STATUSES);
export type LedgerStatus = z.infer<typeof LedgerStatus>;

export const FINAL_STATUSES: ReadonlySet<LedgerStatus> = new Set([
  'succeeded', 'failed', 'skipped', 'forbidden', 'rejected', 'interrupted',
]);
/** Statuses that fail the turn: later commands of the turn are skipped. */
export const FAILURE_STATUSES: ReadonlySet<LedgerStatus> = new Set(['failed', 'forbidden', 'rejected', 'interrupted']);
export const isFinal = (s: LedgerStatus) => FINAL_STATUSES.has(s);

export const EvaluationSchema = z.object({
  decision: Decision,
  matched_rules: z.array(MatchedRule),
  reason: z.string(),
});
export type EvaluationData = z.infer<typeof EvaluationSchema>;

/** `approve_edited`: an operator changed the command (bash `cmd`, write/append `content`) and approved that instead. */
export const ApprovalDecision = z.enum(['approve', 'approve_for_session', 'approve_edited', 'reject', 'expired']);
export const LedgerApproval = z.object({
  token: z.string(),
  requested_at: z.string(),
  expires_at: z.string(),
  decided_by: z.string().nullable(),
  decision: ApprovalDecision.nullable(),
  reason: z.string().nullable(),
  decided_at: z.string().nullable(),
});
export type LedgerApproval = z.infer<typeof LedgerApproval>;

const nstr = z.string().nullable();
const nnum = z.number().nullable();

/**
 * The command as the model asked for it, kept on the record of an `approve_edited` answer
 * (whose own fields then hold what ran): its tool, paths and body, as the ledger shows commands.
 */
export const EditedFrom = z.object({
  tool: ToolName, path: nstr, dest: nstr, cmd: nstr,
  content: nstr, content_size: nnum, content_sha256: nstr, content_truncated: z.boolean(),
});
export type EditedFrom = z.infer<typeof EditedFrom>;

/** Fixed when the record is created. */
export const LedgerBase = z.object({
  session: z.string(),
  turn: z.number().int().nonnegative(),
  id: z.string(),
  tool: ToolName,
  path: nstr, dest: nstr, cmd: nstr,
  /**
   * A body (content, old_text, new_text) keeps at most THINKFLOW_RECORD_BODY_BYTES
   * for the whole command, cut at a UTF-8 boundary; `<f>_size` (bytes) and
   * `<f>_sha256` are of the full body, `<f>_truncated` says it was cut.
   * Records written before these fields read as not truncated.
   */
  content: nstr,
  content_size: nnum,
  content_sha256: nstr,
  content_truncated: z.boolean().default(false),
  old_text: nstr, old_text_size: nnum.default(null), old_text_sha256: nstr.default(null), old_text_truncated: z.boolean().default(false),
  new_text: nstr, new_text_size: nnum.default(null), new_text_sha256: nstr.default(null), new_text_truncated: z.boolean().default(false),
  need_result: z.boolean(),
  timeout: nnum,
  flow: CommandFlow,
  risk: z.enum(['low', 'medium', 'high']),
  decision: Decision,
  /** the strictest matched rule (the one that decided), null when a default decided */
  matched_rule: nstr,
  matched_rules: z.array(MatchedRule),
  justification: nstr,
  policy_reason: nstr,
  enqueued_at: z.string(),
  /**
   * What is known of its timings when it is created (the record's `timings` add the rest): when its closing tag was
   * parsed (none for callers that parse nothing), when the policy decided. Records from before read as admitted when enqueued.
   */
  timings: z.object({ parsed_at: z.string().optional(), admitted_at: z.string() }).optional(),
  /** present only when an operator edited the command before approving it (approve_edited) */
  edited_from: EditedFrom.optional(),
});
export type LedgerBase = z.infer<typeof LedgerBase>;

/** Written when the command becomes final. */
export const LedgerResult = z.object({
  error: nstr,
  error_code: nstr,
  bytes_written: nnum,
  stdout: nstr,
  stderr: nstr,
  stdout_truncated: z.boolean(),
  stderr_truncated: z.boolean(),
  exit_code: nnum,
  duration_ms: nnum,
  output_summary: nstr,
});
export type LedgerResult = z.infer<typeof LedgerResult>;

/**
 * Where the time of one command went (API.md, additions 2026-12-01), ISO 8601 with milliseconds: derived from the
 * record's own timestamps, never stored apart, so it cannot disagree with them. Absent steps are left out.
 */
export const Timings = z.object({
  parsed_at: z.string().optional(),
  admitted_at: z.string(),
  queued_at: z.string(),
  started_at: z.string().optional(),
  finished_at: z.string().optional(),
});
export type Timings = z.infer<typeof Timings>;

export const LedgerRecord = LedgerBase.extend(LedgerResult.shape).extend({
  /** position in the session's ledger (1-based, execution order) */
  index: z.number().int().positive(),
  status: LedgerStatus,
  approval: LedgerApproval.nullable(),
  injected: z.boolean(),
  started_at: nstr,
  finished_at: nstr,
  /** the worker process that ran it (`host:pid`), for audits and recovery */
  executed_by: nstr,
  timings: Timings,
});
export type LedgerRecord = z.infer<typeof LedgerRecord>;

/** The record's timings from its timestamps (call again after any of them changes). */
export function timingsOf(r: Pick<LedgerBase, 'timings' | 'enqueued_at'> & Pick<LedgerRecord, 'started_at' | 'finished_at'>): Timings {
  // In the order of the path (API.md's order), whichever reader built it.
  const t = (r.timings?.parsed_at ? { parsed_at: r.timings.parsed_at } : {}) as Timings;
  t.admitted_at = r.timings?.admitted_at ?? r.enqueued_at;
  t.queued_at = r.enqueued_at;
  if (r.started_at) t.started_at = r.started_at;
  if (r.finished_at) t.finished_at = r.finished_at;
  return t;
}

export const EMPTY_RESULT: LedgerResult = {
  error: null, error_code: null, bytes_written: null, stdout: null, stderr: null,
  stdout_truncated: false, stderr_truncated: false, exit_code: null, duration_ms: null, output_summary: null,
};

/** What a record written before the body fields (size, digest, truncated for each body) reads as. */
const BODY_DEFAULTS = {
  content_truncated: false, old_text_size: null, old_text_sha256: null, old_text_truncated: false,
  new_text_size: null, new_text_sha256: null, new_text_truncated: false,
};

export function riskOf(tool: ToolName): 'low' | 'medium' | 'high' {
  return toolOf(tool).risk;
}

/** Strictest rule first: forbid > prompt > allow; the first of equals wins. */
export function decidingRule(ev: EvaluationData): string | null {
  const rank = { forbid: 2, prompt: 1, allow: 0 } as const;
  let best: EvaluationData['matched_rules'][number] | undefined;
  for (const r of ev.matched_rules) if (!best || rank[r.decision] > rank[best.decision]) best = r;
  return best && best.decision === ev.decision ? best.id : null;
}

export function buildBase(args: {
  session: string; turn: number; command: Command; flow: CommandFlow;
  evaluation: EvaluationData; now: Date; /** THINKFLOW_RECORD_BODY_BYTES */ bodyBytes: number;
  parsedAt?: Date; admittedAt?: Date;
}): LedgerBase {
  const { command: c, evaluation: ev } = args;
  const deciding = decidingRule(ev);
  return {
    session: args.session, turn: args.turn, id: c.id, tool: c.tool,
    path: c.path ?? null, dest: c.dest ?? null, cmd: c.cmd ?? null,
    ...boundBodies(c, args.bodyBytes),
    need_result: c.need_result || toolOf(c.tool).result === 'always',
    timeout: c.timeout ?? null,
    flow: args.flow, risk: riskOf(c.tool), decision: ev.decision,
    matched_rule: deciding,
    matched_rules: ev.matched_rules,
    justification: ev.matched_rules.find((r) => r.id === deciding)?.justification ?? null,
    policy_reason: ev.reason || null,
    enqueued_at: args.now.toISOString(),
    timings: args.parsedAt
      ? { parsed_at: args.parsedAt.toISOString(), admitted_at: (args.admittedAt ?? args.now).toISOString() }
      : { admitted_at: (args.admittedAt ?? args.now).toISOString() },
  };
}

/**
 * The base of a record whose command an operator edited (approve_edited): the edited command's
 * fields and its own policy evaluation, with the asked-for command kept in `edited_from`.
 */
export function editedBase(base: LedgerBase, edited: Command, ev: EvaluationData, bodyBytes: number): LedgerBase {
  const deciding = decidingRule(ev);
  const from: EditedFrom = {
    tool: base.tool, path: base.path, dest: base.dest, cmd: base.cmd,
    content: base.content, content_size: base.content_size, content_sha256: base.content_sha256, content_truncated: base.content_truncated,
  };
  return {
    ...base, cmd: edited.cmd ?? null, ...boundBodies(edited, bodyBytes),
    decision: ev.decision, matched_rule: deciding, matched_rules: ev.matched_rules,
    justification: ev.matched_rules.find((r) => r.id === deciding)?.justification ?? null,
    policy_reason: ev.reason || null, edited_from: from,
  };
}

/**
 * The stored hash (all strings) → a record. Validated with the zod schema
 * (throws on a corrupt record: never guess) unless `validate` is false, which
 * the worker's hot path uses for records this code wrote itself.
 */
export function recordFromHash(index: number, h: Record<string, string>, validate = true): LedgerRecord {
  if (!h.base || !h.status) throw new Error(`ledger record ${index} is incomplete`);
  const raw = assembleRecord(index, JSON.parse(h.base) as LedgerBase, h.result ? (JSON.parse(h.result) as LedgerResult) : null, {
    status: h.status as LedgerStatus,
    approval: h.approval ? JSON.parse(h.approval) : null,
    injected: h.injected === '1',
    started_at: h.started_at || null,
    finished_at: h.finished_at || null,
    executed_by: h.executed_by || null,
  });
  return validate ? LedgerRecord.parse(raw) : raw;
}

type RecordState = Pick<LedgerRecord, 'status' | 'approval' | 'injected' | 'started_at' | 'finished_at' | 'executed_by'>;

/** A record from its parts as stored (the base, the result, the state fields); no schema check: the caller vouches for them. */
export function assembleRecord(index: number, base: LedgerBase, result: LedgerResult | null, state: RecordState): LedgerRecord {
  // Object.assign, not a spread of five overlapping objects: V8's spread left its fast path on the overlaps and took
  // 0.1 ms a call (10 % of a worker's CPU per command, bench/RESULTS.md "Issue 22, fourth pass"); this takes 0.004.
  const rec = Object.assign(blankRecord(), BODY_DEFAULTS, base, EMPTY_RESULT, result, { index }, state);
  rec.timings = timingsOf(rec);
  return rec;
}

/**
 * Every field of a record, in the order records have always been written (JSON output unchanged), each undefined
 * until a part fills it: a field a stored record lacks stays missing (the schema refuses it; nothing is guessed).
 * Copied onto `{}`, 47 fields put a record in V8's dictionary mode, and every later copy and JSON.stringify of it
 * cost 2–6× more (a copy 18 µs, bench/RESULTS.md "Issue 22, seventh pass"); onto this literal's shape it keeps fast properties.
 */
export function blankRecord(): LedgerRecord {
  const u = undefined;
  return {
    content_truncated: u, old_text_size: u, old_text_sha256: u, old_text_truncated: u, new_text_size: u, new_text_sha256: u, new_text_truncated: u,
    session: u, turn: u, id: u, tool: u, path: u, dest: u, cmd: u, content: u, content_size: u, content_sha256: u, old_text: u, new_text: u,
    need_result: u, timeout: u, flow: u, risk: u, decision: u, matched_rule: u, matched_rules: u, justification: u, policy_reason: u,
    enqueued_at: u, timings: u, edited_from: u,
    error: u, error_code: u, bytes_written: u, stdout: u, stderr: u, stdout_truncated: u, stderr_truncated: u, exit_code: u, duration_ms: u, output_summary: u,
    index: u, status: u, approval: u, injected: u, started_at: u, finished_at: u, executed_by: u,
  } as unknown as LedgerRecord;
}

/** UTF-16-safe cap on a captured stream; the flag says something was cut. */
export function capText(s: string | undefined, max: number): { text: string | null; truncated: boolean } {
  if (s === undefined) return { text: null, truncated: false };
  if (s.length <= max) return { text: s, truncated: false };
  let end = max;
  const code = s.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1; // do not split a surrogate pair
  return { text: s.slice(0, end), truncated: true };
}

const oneLine = (s: string, max = 160) => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** A short human summary for the ledger block fed back to the model: the tool's own for a success (tools.ts `done`). */
export function summarize(tool: ToolName, r: Partial<LedgerResult> & { status: LedgerStatus }): string {
  if (r.status !== 'succeeded') return oneLine(r.error ?? r.status);
  return toolOf(tool).done?.(r) ?? 'ok';
}
