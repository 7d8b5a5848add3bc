import { Hono } from 'hono';
import type { Runtime } from '../runtime-deps.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { resumePoint, streamSessionEvents } from '../sse.ts';
import type { StreamCaps } from '../stream-caps.ts';

/**
 * `GET /v1/sessions/:id/events`: the session's events as SSE, `id:` = seq,
 * resumable with `Last-Event-ID` (or `?after=`), replayed from Redis so any
 * API process can serve them.
 */
export function sessionEventRoutes(rt: Pick<Runtime, 'pipeline' | 'redis' | 'keys'> & { streams: StreamCaps }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/:id/events', async (c) => {
    const sid = c.req.param('id');
    const meta = await rt.pipeline.sessions.get(sid, true);
    const me = c.var.principal;
    if (!meta || (me.role === 'submitter' && meta.owner !== me.id)) throw new AppError(404, 'session_not_found', `session ${sid} not found`);
    return streamSessionEvents(c, rt, sid, { after: resumePoint(c) });
  });
  return app;
}
