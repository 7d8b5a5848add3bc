import { Hono } from 'hono';
import type { Runtime } from '../runtime-deps.ts';
import type { AppEnv } from '../env.ts';
import { requireRole } from '../middleware/auth.ts';

const withTimeout = <T>(p: Promise<T>, ms: number, fallback: T) =>
  Promise.race([p.catch(() => fallback), new Promise<T>((r) => setTimeout(() => r(fallback), ms).unref())]);

/** Liveness, readiness (Redis and Docker reachable) and Prometheus metrics. */
export function systemRoutes(rt: Pick<Runtime, 'redis' | 'executor' | 'metrics' | 'keys'>): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  app.get('/readyz', async (c) => {
    const [redis, docker] = await Promise.all([
      withTimeout(rt.redis.ping().then((r) => r === 'PONG'), 2000, false),
      withTimeout(rt.executor.ping(), 3000, false),
    ]);
    const ready = redis && docker;
    return c.json({ status: ready ? 'ready' : 'not_ready', redis, docker }, ready ? 200 : 503);
  });

  // Who the key is (name and role, never the key): the dashboard signs in with it.
  app.get('/v1/whoami', (c) => c.json({ name: c.var.principal.name, role: c.var.principal.role }));

  app.get('/metrics', requireRole('operator', 'admin'), async (c) => {
    const text = await rt.metrics.render();
    return c.text(text, 200, { 'content-type': rt.metrics.contentType });
  });

  return app;
}
