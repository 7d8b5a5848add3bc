import { OpenAPIHono } from '@hono/zod-openapi';
import type { Redis } from 'ioredis';
import type { Keys, Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { requireRole } from '../middleware/auth.ts';
import { json, route } from '../openapi.ts';
import { LimitQuery, Queues } from '../schemas.ts';
import { limitOf } from '../validate.ts';

// `/admin/queues` (operators): the sessions that have, or recently had, work,
// with their BullMQ queue counts and open ledger commands, busiest first.

export type AdminRoutesDeps = { pipeline: Pick<Pipeline, 'queues' | 'sessions'>; redis: Redis; keys: Keys };

const MAX_LIMIT = 500;

const queuesRoute = route({
  method: 'get', path: '/queues', id: 'listQueues', summary: 'Sessions with work: queue counts and open commands', auth: 'operator',
  request: { query: LimitQuery(MAX_LIMIT, 100) },
  ok: { 200: json(Queues, 'the busiest sessions first') },
});

export function adminRoutes({ pipeline, redis, keys }: AdminRoutesDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  // Every /admin path, routed or not, is for operators.
  app.use('*', requireRole('operator', 'admin'));

  app.openapi(queuesRoute, async (c) => {
    const limit = limitOf(c, MAX_LIMIT, 100);
    const sids = await redis.zrevrange(keys.busy(), 0, limit - 1);
    const queues = await Promise.all(sids.map(async (sid) => {
      const [counts, open, meta] = await Promise.all([
        pipeline.queues.queue(sid).getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
        redis.get(keys.open(sid)),
        pipeline.sessions.get(sid),
      ]);
      return { session_id: sid, job_id: meta?.job_id ?? null, approval: meta?.approval ?? null, open_commands: Number(open ?? 0), ...counts };
    }));
    queues.sort((a, b) => b.open_commands - a.open_commands);
    return c.json({ queues }, 200);
  });

  return app;
}
