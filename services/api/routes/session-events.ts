import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { readEvents, type PipelineEvent } from '../../pipeline/events.ts';
import type { Runtime } from '../../pipeline/runtime.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

/**
 * `GET /v1/sessions/:id/events`: the session's pipeline events as SSE, `id:` =
 * seq, resumable with `Last-Event-ID` (or `?after=`), replayed from Redis so
 * any API process can serve them. Subscribes before replaying, so nothing
 * falls between the replay and the live tail.
 */
export function sessionEventRoutes(rt: Pick<Runtime, 'pipeline' | 'redis' | 'keys'>): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/:id/events', async (c) => {
    const sid = c.req.param('id');
    const meta = await rt.pipeline.sessions.get(sid, true);
    const me = c.var.principal;
    if (!meta || (me.role === 'submitter' && meta.owner !== me.id)) throw new AppError(404, 'session_not_found', `session ${sid} not found`);
    const from = Number(c.req.header('last-event-id') ?? c.req.query('after') ?? 0);
    if (!Number.isInteger(from) || from < 0) throw new AppError(400, 'invalid_query', 'Last-Event-ID / after must be a non-negative integer');
    return streamSSE(c, async (stream) => {
      let last = from;
      let live: PipelineEvent[] | null = [];
      let wake: (() => void) | null = null;
      const unsubscribe = await rt.pipeline.hub.subscribe(sid, (e) => { live?.push(e); wake?.(); });
      const send = async (e: PipelineEvent) => {
        if (e.seq <= last) return;
        last = e.seq;
        await stream.writeSSE({ id: String(e.seq), event: e.type, data: JSON.stringify(e) });
      };
      try {
        for (let batch = await readEvents(rt.redis, rt.keys, sid, last); batch.length; batch = await readEvents(rt.redis, rt.keys, sid, last)) {
          for (const e of batch) await send(e);
        }
        while (!stream.aborted) {
          const pending: PipelineEvent[] = live ?? [];
          live = [];
          for (const e of pending) await send(e);
          await new Promise<void>((resolve) => {
            const t = setTimeout(done, 15_000);
            function done() { clearTimeout(t); wake = null; resolve(); }
            wake = done;
            stream.onAbort(done);
          });
          if (!live.length && !stream.aborted) await stream.write(': keep-alive\n\n');
        }
      } finally {
        live = null;
        unsubscribe();
      }
    });
  });
  return app;
}
