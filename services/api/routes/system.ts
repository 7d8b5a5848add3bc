import { OpenAPIHono } from '@hono/zod-openapi';
import { log } from '../../log/index.ts';
import type { AppEnv } from '../env.ts';
import { json, media, route } from '../openapi.ts';
import { Health, Readiness, Whoami } from '../schemas.ts';

// Liveness, readiness (Redis reachable, and Docker where commands run: it
// names what is missing), who the key is, and the Prometheus metrics.

type Check = { up: boolean; reason: string | null };

export type SystemRoutesDeps = {
  /** each is given a time limit here */
  ping: { redis: () => Promise<Check>; docker: () => Promise<boolean> };
  /** a worker needs Docker to be ready; an API-only process does not */
  needsDocker: boolean;
  metrics: { render(): Promise<string>; readonly contentType: string };
};

/** A failed or slow check reads as not reachable, with why (also logged). */
const check = (what: string, p: Promise<Check>, ms: number) => Promise.race([
  p.catch((err: unknown) => {
    log().warn({ err, check: what }, 'readiness: check failed');
    return { up: false, reason: (err as Error).message };
  }),
  new Promise<Check>((r) => setTimeout(() => r({ up: false, reason: `no answer within ${ms / 1000} s` }), ms).unref()),
]);

const routes = {
  health: route({ method: 'get', path: '/healthz', id: 'getHealth', summary: 'Liveness', auth: 'none', ok: { 200: json(Health, 'alive') } }),
  ready: route({
    method: 'get', path: '/readyz', id: 'getReadiness', summary: 'Readiness: Redis and Docker reachable (503 when not)', auth: 'none',
    ok: { 200: json(Readiness, 'ready'), 503: json(Readiness, 'a dependency this process needs does not answer: Redis, or Docker for a worker (`unavailable`, `reason`)') },
  }),
  whoami: route({
    method: 'get', path: '/v1/whoami', id: 'whoAmI', summary: "The key's display name and role (never the key)", auth: 'any',
    ok: { 200: json(Whoami, 'the caller') },
  }),
  metrics: route({
    method: 'get', path: '/metrics', id: 'getMetrics', summary: 'Prometheus text format', auth: 'operator',
    ok: { 200: media('the metrics', 'text/plain') },
  }),
};

export function systemRoutes(d: SystemRoutesDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(routes.health, (c) => c.json({ status: 'ok' as const }, 200));

  app.openapi(routes.ready, async (c) => {
    const docker = async () => ({ up: await d.ping.docker(), reason: 'the Docker engine does not answer' });
    const [redis, engine] = await Promise.all([check('redis', d.ping.redis(), 2000), check('docker', docker(), 3000)]);
    const missing = [
      ...(redis.up ? [] : [['redis', redis.reason ?? 'unreachable'] as const]),
      ...(engine.up || !d.needsDocker ? [] : [['docker', engine.reason ?? 'unreachable'] as const]),
    ];
    const ready = missing.length === 0;
    return c.json({
      status: ready ? 'ready' : 'not_ready', redis: redis.up, docker: engine.up,
      unavailable: missing.map(([dep]) => dep), reason: ready ? null : missing.map(([dep, why]) => `${dep}: ${why}`).join('; '),
    }, ready ? 200 : 503);
  });

  // The dashboard signs in with it.
  app.openapi(routes.whoami, (c) => c.json({ name: c.var.principal.name, role: c.var.principal.role }, 200));

  app.openapi(routes.metrics, async (c) => {
    const text = await d.metrics.render();
    return c.text(text, 200, { 'content-type': d.metrics.contentType });
  });

  return app;
}
