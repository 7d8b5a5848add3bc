import { z } from 'zod';

// REST bodies and queries (API.md). Strict: unknown fields are a 400.

export const CreateSessionBody = z.strictObject({
  project: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/).optional(),
  approval: z.enum(['never', 'on-request']).optional(),
  /** workspace path → content, written before any command; not commands (never in the ledger): event files_seeded */
  files: z.record(z.string().min(1).max(4096), z.string()).optional(),
  /** a session policy layer, same shape as a policy file (or its YAML text) */
  policy: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
});
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;

export const AnswerApprovalBody = z.strictObject({
  decision: z.enum(['approve', 'approve_for_session', 'reject']),
  reason: z.string().optional(),
  /**
   * approve_for_session only: `exact` (default) grants the same command; `prefix` the
   * matched rule's prefix, when the approval offers it (POLICY.md §7, `grant_options`).
   */
  scope: z.enum(['exact', 'prefix']).optional(),
});

export const ApprovalsQuery = z.strictObject({
  status: z.literal('pending').default('pending'),
});
