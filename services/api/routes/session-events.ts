import { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env.ts';
import { route, sse } from '../openapi.ts';
import { resumePoint, streamSessionEvents, type EventStreamDeps } from '../sse.ts';
import { visibleSession } from './sessions.ts';

const eventsRoute = route({
  method: 'get', path: '/{id}/events', id: 'streamSessionEvents', summary: "The session's events as SSE, resumable with Last-Event-ID", auth: 'any', capped: true,
  ok: { 200: sse("the session's events (API.md §Events), `id:` = seq; `gap {first_seq}` before trimmed events") },
});

/**
 * `GET /v1/sessions/:id/events`: the session's events as SSE, `id:` = seq,
 * resumable with `Last-Event-ID` (or `?after=`), replayed from Redis so any
 * API process can serve them.
 */
export function sessionEventRoutes(d: EventStreamDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(eventsRoute, async (c) => {
    const meta = await visibleSession(c, d.pipeline);
    return streamSessionEvents(c, d, meta.session_id, { after: resumePoint(c) });
  });
  return app;
}
