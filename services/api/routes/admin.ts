import { Hono } from 'hono';
import type { Runtime } from '../runtime-deps.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { requireRole } from '../middleware/auth.ts';

// `/admin/queues` (operators): the sessions that have, or recently had, work,
// with their BullMQ queue counts and open ledger commands, busiest first.

const MAX_LIMIT = 500;

export function adminRoutes(rt: Pick<Runtime, 'redis' | 'keys' | 'pipeline'>): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use('*', requireRole('operator', 'admin'));

  app.get('/queues', async (c) => {
    const raw = c.req.query('limit') ?? '100';
    const limit = Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new AppError(400, 'invalid_query', `limit must be a whole number from 1 to ${MAX_LIMIT}, got '${raw}'`);
    }
    const sids = await rt.redis.zrevrange(rt.keys.busy(), 0, limit - 1);
    const queues = await Promise.all(sids.map(async (sid) => {
      const [counts, open, meta] = await Promise.all([
        rt.pipeline.queues.queue(sid).getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
        rt.redis.get(rt.keys.open(sid)),
        rt.pipeline.sessions.get(sid),
      ]);
      return { session_id: sid, job_id: meta?.job_id ?? null, approval: meta?.approval ?? null, open_commands: Number(open ?? 0), ...counts };
    }));
    queues.sort((a, b) => b.open_commands - a.open_commands);
    return c.json({ queues });
  });

  return app;
}
