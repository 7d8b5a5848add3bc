import { Hono } from 'hono';
import type { Pipeline } from '../../pipeline/pipeline.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { maxBody } from '../middleware/limits.ts';
import { AnswerApprovalBody, ApprovalsQuery } from '../schemas.ts';
import { parseWith, readJson } from '../validate.ts';

export type ApprovalRoutesDeps = { pipeline: Pipeline; maxJsonBytes: number };

/** Operator routes (the caller mounts them behind requireRole('operator', 'admin')). */
export function approvalRoutes({ pipeline: p, maxJsonBytes }: ApprovalRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/', async (c) => {
    parseWith(ApprovalsQuery, c.req.query(), 'invalid_query');
    const pending = await p.approvals.listPending();
    return c.json({
      approvals: pending.map((a) => ({
        token: a.token, session_id: a.session_id, job_id: a.job_id, command_id: a.command_id, tool: a.tool,
        target: a.target, matched_rules: a.matched_rules, justification: a.justification,
        created_at: a.created_at, expires_at: a.expires_at, grant_options: a.grant_options ?? [],
      })),
    });
  });

  app.post('/:token', maxBody(maxJsonBytes), async (c) => {
    const token = c.req.param('token');
    const body = await readJson(c, AnswerApprovalBody);
    if (body.scope !== undefined && body.decision !== 'approve_for_session') {
      throw new AppError(400, 'invalid_body', `scope applies to approve_for_session only, not ${body.decision}`, { details: { field: 'scope' } });
    }
    if (body.scope === 'prefix') await requirePrefixOption(p, token);
    const outcome = await p.approvals.answer(token, body.decision, body.reason ?? null, c.var.principal.name, body.scope ?? 'exact');
    if (outcome === 'unknown') throw new AppError(404, 'approval_not_found', 'no such approval token');
    if (outcome !== 'ok') {
      const state = await p.approvals.get(token);
      const by = state?.decided_by ?? null;
      const at = state?.decided_at ?? null;
      const message = outcome === 'expired' || state?.status === 'expired'
        ? `approval expired at ${state?.expires_at ?? 'its expiry time'} (no operator answered in time)`
        : `approval already decided by ${by ?? 'someone'} at ${at ?? 'an earlier time'} (${state?.decision ?? outcome})`;
      throw new AppError(409, 'approval_closed', message, {
        details: { status: state?.status ?? outcome, decision: state?.decision ?? null, decided_by: by, decided_at: at },
      });
    }
    const state = await p.approvals.get(token);
    return c.json({ approval: state });
  });

  return app;
}

/** A wider grant is given only where the approval offered it (never for shells, interpreters, wrappers). */
async function requirePrefixOption(p: Pipeline, token: string): Promise<void> {
  const state = await p.approvals.get(token);
  if (!state || state.status !== 'pending') return; // answer() reports unknown / closed
  const prefix = state.grant_options?.find((o) => o.scope === 'prefix');
  if (prefix && prefix.unavailable === undefined) return;
  const why = prefix?.unavailable ?? 'this approval offers no prefix grant';
  throw new AppError(400, 'grant_scope_unavailable', `no prefix grant for this approval: ${why}`, {
    details: { scope: 'prefix', reason: why, grant_options: state.grant_options ?? [] },
  });
}
