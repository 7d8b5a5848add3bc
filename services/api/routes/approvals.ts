import { OpenAPIHono } from '@hono/zod-openapi';
import { z } from 'zod';
import { answerEdited, editPortsOf, PublicApproval, type EditSource, type Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { maxBody } from '../middleware/limits.ts';
import { json, route } from '../openapi.ts';
import { listedApproval, listQuery } from '../approval-listing.ts';
import { jobFacts, withJobContext, type JobFacts } from '../approval-context.ts';
import { AnswerApprovalBody, ApprovalsQuery, ListedApproval } from '../schemas.ts';
import { jsonBody } from '../validate.ts';

// Operator routes of POLICY.md §5: the approvals (pending, or answered with
// their outcomes: approval-listing.ts), and one answer to one of them (at
// most once: a second answer, or one after expiry, is a 409).

export type ApprovalRoutesDeps = {
  pipeline: Pick<Pipeline, 'approvals'> & EditSource; maxJsonBytes: number;
  /** the jobs' tasks and metadata, for each approval's `context` (approval-context.ts) */
  jobFacts?: JobFacts;
};

const routes = (d: ApprovalRoutesDeps) => ({
  list: route({
    method: 'get', path: '/', id: 'listApprovals', auth: 'operator',
    summary: 'Approvals: pending (oldest first), or decided / expired / all (newest first) with their answers and outcomes',
    request: { query: ApprovalsQuery },
    ok: { 200: json(z.object({ approvals: z.array(ListedApproval) }), 'the approvals asked for; an approved one whose command is final carries its `outcome`') },
  }),
  answer: route({
    method: 'post', path: '/{token}', id: 'answerApproval', summary: 'Answer an approval', auth: 'operator', writes: true,
    errors: {
      400: '`invalid_body` (a field that does not fit the decision or the command, named in `details.field`); `edit_forbidden` (approve_edited: the policy forbids the edited command, `details.rule`; the approval stays pending)',
      404: '`approval_not_found`', 409: '`approval_closed` (already answered, or expired)',
    },
    middleware: [maxBody(d.maxJsonBytes), jsonBody()],
    request: { body: { required: true, content: { 'application/json': { schema: AnswerApprovalBody } } } },
    ok: { 200: json(z.object({ approval: PublicApproval.nullable() }), 'the approval as answered') },
  }),
});

export function approvalRoutes(d: ApprovalRoutesDeps): OpenAPIHono<AppEnv> {
  const r = routes(d);
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(r.list, async (c) => {
    const rows = await withJobContext(d.jobFacts ?? jobFacts(null), await d.pipeline.approvals.history.list(listQuery(c, c.req.valid('query')), d.pipeline.records));
    return c.json({ approvals: rows.map(listedApproval) }, 200);
  });

  app.openapi(r.answer, async (c) => {
    const a = d.pipeline.approvals;
    const token = c.req.param('token');
    const body = c.req.valid('json');
    if (body.scope !== undefined && body.decision !== 'approve_for_session') {
      throw new AppError(400, 'invalid_body', `scope applies to approve_for_session only, not ${body.decision}`, { details: { field: 'scope' } });
    }
    const edit = body.cmd !== undefined ? 'cmd' : body.content !== undefined ? 'content' : null;
    if (edit && body.decision !== 'approve_edited') {
      throw new AppError(400, 'invalid_body', `${edit} applies to approve_edited only, not ${body.decision}`, { details: { field: edit } });
    }
    if (body.scope === 'prefix') await requirePrefixOption(a, token);
    const outcome = body.decision === 'approve_edited'
      ? await answerEdited(editPortsOf(d.pipeline), token, body, body.reason ?? null, c.var.principal.name)
      : await a.answer(token, body.decision, body.reason ?? null, c.var.principal.name, body.scope ?? 'exact');
    if (outcome === 'unknown') throw new AppError(404, 'approval_not_found', 'no such approval token');
    if (outcome !== 'ok') throw closed(await a.get(token), outcome);
    return c.json({ approval: await a.get(token) }, 200);
  });

  return app;
}

type Approvals = Pipeline['approvals'];
type State = Awaited<ReturnType<Approvals['get']>>;

/** 409 `approval_closed`: who answered it and when, or when it expired. */
function closed(state: State, outcome: string): AppError {
  const by = state?.decided_by ?? null;
  const at = state?.decided_at ?? null;
  const message = outcome === 'expired' || state?.status === 'expired'
    ? `approval expired at ${state?.expires_at ?? 'its expiry time'} (no operator answered in time)`
    : `approval already decided by ${by ?? 'someone'} at ${at ?? 'an earlier time'} (${state?.decision ?? outcome})`;
  return new AppError(409, 'approval_closed', message, {
    details: { status: state?.status ?? outcome, decision: state?.decision ?? null, decided_by: by, decided_at: at },
  });
}

/** A wider grant is given only where the approval offered it (never for shells, interpreters, wrappers). */
async function requirePrefixOption(a: Approvals, token: string): Promise<void> {
  const state = await a.get(token);
  if (!state || state.status !== 'pending') return; // answer() reports unknown / closed
  const prefix = state.grant_options?.find((o) => o.scope === 'prefix');
  if (prefix && prefix.unavailable === undefined) return;
  const why = prefix?.unavailable ?? 'this approval offers no prefix grant';
  throw new AppError(400, 'grant_scope_unavailable', `no prefix grant for this approval: ${why}`, {
    details: { scope: 'prefix', reason: why, grant_options: state.grant_options ?? [] },
  });
}
