import { OpenAPIHono } from '@hono/zod-openapi';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { ApprovalPreview, previewApproval, type Keys, type Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { json, route } from '../openapi.ts';

// Preview before deciding (issue 24): `POST /v1/approvals/:token/preview`
// runs the pending command on a throwaway copy of its session's workspace
// (pipeline/approval-preview.ts; a worker does it, this process may have no
// Docker) and answers what it printed and changed. A preview that is not
// possible is a 200 with `status: "unavailable"` and the reason, so the card
// shows it; only an unknown token (404) or an approval no longer pending
// (409) is an error.

export type ApprovalPreviewRoutesDeps = { pipeline: Pick<Pipeline, 'approvals' | 'records' | 'sandboxes'>; redis: Redis; keys: Keys };

/**
 * How long one approval's preview holds its one-at-a-time key at most: longer
 * than a sandbox call waits for its answer (THINKFLOW_SANDBOX_CALL_PICKUP_MS +
 * _ANSWER_MS, 125 s by default), so only a caller that died leaves it to expire.
 */
const LOCK_MS = 180_000;

const previewRoute = route({
  method: 'post', path: '/{token}/preview', id: 'previewApproval', auth: 'operator', writes: true,
  summary: 'Preview a pending command: run it on a throwaway copy of the session\'s workspace (network none, the session\'s limits) and show its output and file changes',
  errors: { 404: '`approval_not_found`', 409: '`approval_closed` (answered or expired: nothing to preview)' },
  ok: { 200: json(z.object({ preview: ApprovalPreview }), 'the preview; `status: "unavailable"` with `reason` when none is possible (a network approval, a workspace over THINKFLOW_PREVIEW_MAX_WORKSPACE_MB, no worker, one already running)') },
});

export function approvalPreviewRoutes(d: ApprovalPreviewRoutesDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(previewRoute, async (c) => {
    const p = d.pipeline;
    const state = await p.approvals.get(c.req.param('token'));
    if (!state) throw new AppError(404, 'approval_not_found', 'no such approval token');
    const expired = state.status === 'pending' && Date.parse(state.expires_at) <= Date.now();
    if (state.status !== 'pending' || expired) {
      const message = state.status === 'pending' || state.status === 'expired'
        ? `approval expired at ${state.expires_at}: nothing to preview`
        : `approval already decided by ${state.decided_by ?? 'someone'} at ${state.decided_at ?? 'an earlier time'} (${state.decision ?? state.status}): nothing to preview`;
      throw new AppError(409, 'approval_closed', message, { details: { status: expired ? 'expired' : state.status, decided_by: state.decided_by, decided_at: state.decided_at } });
    }
    const preview = await previewApproval({ approvals: p.approvals, records: p.records, sandboxes: p.sandboxes, redis: d.redis, keys: d.keys, lockMs: LOCK_MS }, state);
    return c.json({ preview }, 200);
  });
  return app;
}
