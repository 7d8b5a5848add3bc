import type { Context, MiddlewareHandler, Next } from 'hono';
import { routePath } from 'hono/route';
import type { Counter } from '../../pipeline/metrics.ts';
import type { AppEnv } from '../env.ts';

/** Counts requests by method, matched route pattern (not raw path: bounded labels) and status. */
export function httpMetrics({ counter }: { counter: Counter<'method' | 'route' | 'status'> }): MiddlewareHandler<AppEnv> {
  return async function httpMetrics(c: Context<AppEnv>, next: Next) {
    await next();
    counter.inc({ method: c.req.method, route: c.res.status === 404 && !c.req.matchedRoutes.length ? 'unmatched' : routePath(c), status: String(c.res.status) });
  };
}
