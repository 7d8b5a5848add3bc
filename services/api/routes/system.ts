import { OpenAPIHono } from '@hono/zod-openapi';
import { log } from '../../log/index.ts';
import type { AppEnv } from '../env.ts';
import { json, media, route } from '../openapi.ts';
import { Health, Readiness, Whoami } from '../schemas.ts';

// Liveness, readiness (Redis and Docker reachable), who the key is, and the
// Prometheus metrics.

export type SystemRoutesDeps = {
  /** true when reachable; each is given a time limit here */
  ping: { redis: () => Promise<boolean>; docker: () => Promise<boolean> };
  metrics: { render(): Promise<string>; readonly contentType: string };
};

/** A failed or slow check reads as not reachable (logged: the answer says only false). */
const check = (what: string, p: Promise<boolean>, ms: number) => Promise.race([
  p.catch((err: unknown) => {
    log().warn({ err, check: what }, 'readiness: check failed');
    return false;
  }),
  new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref()),
]);

const routes = {
  health: route({ method: 'get', path: '/healthz', id: 'getHealth', summary: 'Liveness', auth: 'none', ok: { 200: json(Health, 'alive') } }),
  ready: route({
    method: 'get', path: '/readyz', id: 'getReadiness', summary: 'Readiness: Redis and Docker reachable (503 when not)', auth: 'none',
    ok: { 200: json(Readiness, 'ready'), 503: json(Readiness, 'Redis or Docker is not reachable') },
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
    const [redis, docker] = await Promise.all([check('redis', d.ping.redis(), 2000), check('docker', d.ping.docker(), 3000)]);
    const ready = redis && docker;
    return c.json({ status: ready ? 'ready' : 'not_ready', redis, docker }, ready ? 200 : 503);
  });

  // The dashboard signs in with it.
  app.openapi(routes.whoami, (c) => c.json({ name: c.var.principal.name, role: c.var.principal.role }, 200));

  app.openapi(routes.metrics, async (c) => {
    const text = await d.metrics.render();
    return c.text(text, 200, { 'content-type': d.metrics.contentType });
  });

  return app;
}
