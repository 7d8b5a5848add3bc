import { OpenAPIHono } from '@hono/zod-openapi';
import type { Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { requireRole } from '../middleware/auth.ts';
import { json, route } from '../openapi.ts';
import { LimitQuery, Queues } from '../schemas.ts';
import { limitOf } from '../validate.ts';

// `/admin/queues` (operators): the sessions that have, or recently had, work,
// with their BullMQ queue counts and open ledger commands, busiest first.

export type AdminRoutesDeps = { pipeline: Pick<Pipeline, 'queueOverview'> };

const MAX_LIMIT = 500;

const queuesRoute = route({
  method: 'get', path: '/queues', id: 'listQueues', summary: 'Sessions with work: queue counts and open commands', auth: 'operator',
  request: { query: LimitQuery(MAX_LIMIT, 100) },
  ok: { 200: json(Queues, 'the busiest sessions first') },
});

export function adminRoutes({ pipeline }: AdminRoutesDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  // Every /admin path, routed or not, is for operators.
  app.use('*', requireRole('operator', 'admin'));

  app.openapi(queuesRoute, async (c) => {
    const limit = limitOf(c, MAX_LIMIT, 100);
    const queues = await pipeline.queueOverview(limit);
    return c.json({ queues }, 200);
  });

  return app;
}
