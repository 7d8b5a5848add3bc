import { z } from 'zod';
import { ApprovalContext, ApprovalDecision, IndirectFile, PublicApproval, type ApprovalState } from '../pipeline/index.ts';
import { Decision, MatchedRule, type BashExplanation as BashExplanationType, type Grant as GrantType } from '../policy/index.ts';
import { ToolName } from '../protocol/index.ts';
import type { ApprovalCard as ApprovalCardType, DiffLine as DiffLineType, RecentEntry as RecentEntryType, TextFacts as TextFactsType } from './approval-view.ts';
import type { CardCommand as CardCommandType, CardView as CardViewType } from './card/card-views.ts';
import type { ScriptLines as ScriptLinesType } from './card/indirect-lines.ts';
import { JobViewRef, named } from './openapi.ts';

// The events of the two cross-session streams (live-routes.ts), one zod
// discriminated union each, on `event` (the SSE `event:` name) with `data`
// (the SSE `data:` JSON). The unions are what the OpenAPI document shows for
// each stream and what the routes may push (live-feed.ts types `push` by them),
// so the document, the server and a client's parser cannot drift apart.
// The operator stream's names are its own (`snapshot`, `approval`,
// `resolution`): a session's stream has `approval_requested` and
// `approval_resolved` with other shapes, and one name must mean one shape.
//
// The card's parts are built with TypeScript types where they are computed
// (card-views.ts, bounded-diff.mjs, policy/); the schemas below mirror them,
// and the `Agree` checks at the end fail the typecheck when either side
// changes without the other.

/** An approval as the store holds it (pipeline/approvals.ts ApprovalState): the public approval, its ledger index, its context. */
export const ApprovalStateSchema = PublicApproval.extend({
  status: z.union([z.literal('pending'), ApprovalDecision]),
  index: z.number().int(),
  context: ApprovalContext.optional(),
  indirect: IndirectFile.nullable().optional(),
});

/** The command as the card shows it: bodies cut at THINKFLOW_DIFF_MAX_BYTES (`text_truncated`). */
export const CardCommand = z.object({
  id: z.string().nullable(),
  path: z.string().nullable(), dest: z.string().nullable(), cmd: z.string().nullable(), content: z.string().nullable(), content_size: z.number().nullable(),
  old_text: z.string().nullable(), new_text: z.string().nullable(), text_truncated: z.boolean(),
});

export const DiffLine = z.object({ op: z.enum([' ', '-', '+']), text: z.string() });
/** One side of an edit: its size and hash, shown when there is no diff. */
export const TextFacts = z.object({ bytes: z.number(), lines: z.number(), sha256: z.string() });

/** policy/explain.ts: a bash script's simple commands, each judged on its own. */
export const BashExplanation = z.object({
  /** why the script could not be split (then one segment: the whole script) */
  complex: z.string().nullable(),
  segments: z.array(z.object({ text: z.string(), argv: z.array(z.string()), decision: Decision, matched_rules: z.array(MatchedRule), reason: z.string() })),
});

/** policy/policy.ts: what approve_for_session would grant. */
export const Grant = z.object({
  tool: ToolName, argv: z.array(z.string()).optional(), prefix: z.array(z.string()).optional(), path: z.string().optional(), dest: z.string().optional(),
});

/** card/indirect-lines.ts: a shell script's lines that run something, each explained like a bash command. */
export const ScriptLines = z.object({
  lines: z.array(z.object({ line: z.number().int(), text: z.string(), bash: BashExplanation })),
  truncated: z.boolean(),
});

/** One of the session's last ledger entries before the approval's command. */
export const RecentEntry = z.object({
  index: z.number().int(), id: z.string(), tool: z.string(), status: z.string(), target: z.string(),
  decided_by: z.string().nullable(), decision: z.string().nullable(),
});

/** card/card-views.ts CardView: the parts computed once per approval. */
const CardViewSchema = z.object({
  policy_reason: z.string().nullable(),
  command: CardCommand,
  /** null past the THINKFLOW_DIFF_MAX_* limits, with `diff_truncated` and `diff_note` */
  diff: z.array(DiffLine).nullable(),
  diff_truncated: z.boolean(),
  diff_note: z.string().nullable(),
  edit_sides: z.object({ old: TextFacts, new: TextFacts }).nullable(),
  bash: BashExplanation.nullable(),
  grant: z.object({ scope: Grant.nullable(), words: z.string() }),
  indirect_lines: ScriptLines.nullable().optional(),
});

/** A pending approval as an operator decides it (approval-view.ts). */
export const ApprovalCard = named(ApprovalStateSchema.extend(CardViewSchema.shape).extend({
  /** the session's last ledger entries before this command, not the ones queued after it */
  recent: z.array(RecentEntry),
}), 'ApprovalCard');

/** An approval answered or expired: who, when, why. */
export const Resolution = ApprovalStateSchema.pick({
  token: true, session_id: true, job_id: true, command_id: true, decision: true, decided_by: true, decided_at: true, reason: true,
}).extend({ status: ApprovalDecision });

const event = <E extends string, D extends z.ZodType>(name: E, data: D) => z.object({ event: z.literal(name), data });

/** `GET /v1/approvals/events`: `snapshot` on every (re)connect, then each new pending card and each answer or expiry. */
export const ApprovalsStreamEvent = named(z.discriminatedUnion('event', [
  event('snapshot', z.object({ approvals: z.array(ApprovalCard) })),
  event('approval', ApprovalCard),
  event('resolution', Resolution),
]), 'ApprovalsStreamEvent');
export type ApprovalsStreamEvent = z.infer<typeof ApprovalsStreamEvent>;

/** `GET /v1/jobs/events`: `snapshot` on every (re)connect, then a job's view each time it changes. */
export const JobsStreamEvent = named(z.discriminatedUnion('event', [
  event('snapshot', z.object({ jobs: z.array(JobViewRef) })),
  event('job', JobViewRef),
]), 'JobsStreamEvent');
export type JobsStreamEvent = z.infer<typeof JobsStreamEvent>;

// Compile-time: each schema's type and the TypeScript type it mirrors are assignable both ways.
type Agree<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
export type SchemasAgree = [
  Assert<Agree<z.infer<typeof ApprovalStateSchema>, ApprovalState>>,
  Assert<Agree<z.infer<typeof CardCommand>, CardCommandType>>,
  Assert<Agree<z.infer<typeof DiffLine>, DiffLineType>>,
  Assert<Agree<z.infer<typeof TextFacts>, TextFactsType>>,
  Assert<Agree<z.infer<typeof BashExplanation>, BashExplanationType>>,
  Assert<Agree<z.infer<typeof Grant>, GrantType>>,
  Assert<Agree<z.infer<typeof ScriptLines>, ScriptLinesType>>,
  Assert<Agree<z.infer<typeof RecentEntry>, RecentEntryType>>,
  Assert<Agree<z.infer<typeof CardViewSchema>, CardViewType>>,
  Assert<Agree<z.infer<typeof ApprovalCard>, ApprovalCardType>>,
];
