import { z } from 'zod';
import { ROLES } from '../config/index.ts';
import { ApprovalAnswer, ApprovalContext, ApprovalDecision, ApprovalListStatus, ApprovalOutcome, IndirectFile, PublicApproval, SessionMeta } from '../pipeline/index.ts';
import { ApprovalMode, GrantScope, ProjectName } from '../policy/index.ts';

// REST bodies, queries and the answers only the API gives (API.md). Request
// schemas are strict: unknown fields are a 400. Concepts with a home below
// the API (a job, a ledger record, an approval, a decision) are imported,
// never declared again here.

export const CreateSessionBody = z.strictObject({
  project: ProjectName.optional(),
  approval: ApprovalMode.optional(),
  /** workspace path → content, written before any command; not commands (never in the ledger): event files_seeded */
  files: z.record(z.string().min(1).max(4096), z.string()).optional(),
  /** a session policy layer, same shape as a policy file (or its YAML text) */
  policy: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export const AnswerApprovalBody = z.strictObject({
  decision: ApprovalAnswer,
  reason: z.string().optional(),
  /**
   * approve_for_session only: `exact` (default) grants the same command; `prefix` the
   * matched rule's prefix, when the approval offers it (POLICY.md §7, `grant_options`).
   */
  scope: GrantScope.optional(),
  /** approve_edited of a bash command: the command to run instead (at most 64 KiB, like a tag's) */
  cmd: z.string().optional().meta({ description: 'approve_edited of a bash command: the edited command, run instead of the asked one', example: 'npm test -- --run' }),
  /** approve_edited of a write or append: the content to write instead (at most THINKFLOW_MAX_TAG_BODY_BYTES) */
  content: z.string().optional().meta({ description: 'approve_edited of a write or append: the edited content, written instead of the asked one' }),
});

/** `?limit=` as documented; checked by `limitOf`, which answers in the API's long-standing words. */
export const LimitQuery = (max: number, fallback: number) => z.object({
  limit: z.string().optional().meta({ description: `a whole number from 1 to ${max} (default ${fallback})`, example: String(fallback) }),
});

/** A pending approval as `GET /v1/approvals` lists it. */
export const PendingApproval = PublicApproval.pick({
  token: true, session_id: true, job_id: true, command_id: true, tool: true, target: true,
  matched_rules: true, justification: true, created_at: true, expires_at: true,
}).extend({
  grant_options: PublicApproval.shape.grant_options.unwrap(),
  /** the job's task and metadata, and what the model said just before the command (API.md, additions 2026-12-01) */
  context: ApprovalContext,
  /** for a command that runs a workspace file (`bash FILE`, `npm test`, …): that file, and which command wrote it */
  indirect: IndirectFile.optional(),
});
export type PendingApproval = z.infer<typeof PendingApproval>;

/** `GET /v1/approvals`: which ones (pending by default), filtered by job, session, who answered and when they were asked. */
export const ApprovalsQuery = z.strictObject({
  ...LimitQuery(1000, 100).shape,
  status: ApprovalListStatus.default('pending').meta({ description: '`pending` (oldest first), or `decided`, `expired`, `all` (newest first)' }),
  job_id: z.string().min(1).max(200).optional(),
  session_id: z.string().min(1).max(200).optional(),
  decided_by: z.string().min(1).max(200).optional().meta({ description: 'who answered: the key\'s name (`system` for expiries and withdrawals)' }),
  since: z.iso.datetime({ offset: true }).optional().meta({ description: 'asked at or after this time (ISO 8601)', example: '2026-12-01T09:00:00Z' }),
});

/** An answered or expired approval as `GET /v1/approvals` lists it: the answer and, once its command ran, what it did. */
export const DecidedApproval = PendingApproval.extend({
  status: ApprovalDecision,
  decision: ApprovalDecision,
  decided_by: z.string(),
  decided_at: z.string(),
  reason: z.string().optional(),
  outcome: ApprovalOutcome.optional(),
});
export type DecidedApproval = z.infer<typeof DecidedApproval>;

/** One item of `GET /v1/approvals`: a pending approval (`status: "pending"`) or an answered one. */
export const ListedApproval = z.union([PendingApproval.extend({ status: z.literal('pending') }), DecidedApproval]);
export type ListedApproval = z.infer<typeof ListedApproval>;

/** A session as `GET /v1/sessions/:id` shows it: its owner and policy stay inside. */
export const SessionView = SessionMeta.omit({ owner: true, policy: true });

export const SessionCreated = z.object({ session_id: z.string() });
export const Whoami = z.object({ name: z.string(), role: z.enum(ROLES) });
export const Health = z.object({ status: z.literal('ok') });
export const Dependency = z.enum(['redis', 'docker']);
export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  /** each dependency answered (Docker is reported by an API-only process too, but only a worker needs it) */
  redis: z.boolean(),
  docker: z.boolean(),
  /** the dependencies this process needs that do not answer: why it is not ready */
  unavailable: z.array(Dependency).meta({ example: ['redis'] }),
  /** the failure in words, null when ready */
  reason: z.string().nullable().meta({ example: 'redis: Command timed out' }),
});
export const Queues = z.object({
  queues: z.array(z.looseObject({ session_id: z.string(), job_id: z.string().nullable(), approval: ApprovalMode.nullable(), open_commands: z.number().int() })),
});
/** A directory of the workspace (a file is answered as its bytes). */
export const DirectoryListing = z.object({ entries: z.array(z.looseObject({ name: z.string(), type: z.string() })) });
