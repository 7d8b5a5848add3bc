import type { Context } from 'hono';
import type { ApprovalQuery, ApprovalWithOutcome } from '../pipeline/index.ts';
import type { AppEnv } from './env.ts';
import type { ApprovalsQuery, ListedApproval, PendingApproval } from './schemas.ts';
import { limitOf } from './validate.ts';
import type { z } from 'zod';

// `GET /v1/approvals` (API.md, additions 2026-12-01): the query as the
// history reads it, and one approval as the listing shows it — the pending
// fields, plus the answer and the command's outcome once there are any.

export const LIST_MAX = 1000;
export const LIST_DEFAULT = 100;

/** The checked query (ApprovalsQuery; `limit` by limitOf, in the API's usual words) as the history takes it. */
export function listQuery(c: Context<AppEnv>, q: z.infer<typeof ApprovalsQuery>): ApprovalQuery {
  const out: ApprovalQuery = { status: q.status, limit: limitOf(c, LIST_MAX, LIST_DEFAULT) };
  if (q.job_id !== undefined) out.job_id = q.job_id;
  if (q.session_id !== undefined) out.session_id = q.session_id;
  if (q.decided_by !== undefined) out.decided_by = q.decided_by;
  if (q.since !== undefined) out.since = Date.parse(q.since);
  return out;
}

/** A pending approval's fields as every listing shows them. */
export function pendingFields(x: ApprovalWithOutcome): PendingApproval {
  return {
    token: x.token, session_id: x.session_id, job_id: x.job_id, command_id: x.command_id, tool: x.tool,
    target: x.target, matched_rules: x.matched_rules, justification: x.justification,
    created_at: x.created_at, expires_at: x.expires_at, grant_options: x.grant_options ?? [],
    // The job's part of the context is added by the route (approval-context.ts); approvals from before have none.
    context: x.context ?? { preceding_text: '' }, ...(x.indirect ? { indirect: x.indirect } : {}),
  };
}

export function listedApproval(x: ApprovalWithOutcome): ListedApproval {
  const base = pendingFields(x);
  if (x.status === 'pending') return { ...base, status: 'pending' };
  // The answer script writes the decision as the status: one value, two names.
  return {
    ...base, status: x.status, decision: x.status, decided_by: x.decided_by ?? 'system', decided_at: x.decided_at ?? '',
    ...(x.reason ? { reason: x.reason } : {}),
    ...(x.outcome ? { outcome: x.outcome } : {}),
  };
}
