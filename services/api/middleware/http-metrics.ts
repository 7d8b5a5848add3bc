import type { Context, MiddlewareHandler, Next } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from '../env.ts';

/** What the middleware needs of a counter (the process metrics' `thinkflow_http_requests_total`). */
export type RequestCounter = { inc(labels: { method: string; route: string; status: string }): void };

/** Counts requests by method, matched route pattern (not raw path: bounded labels) and status. */
export function httpMetrics({ counter }: { counter: RequestCounter }): MiddlewareHandler<AppEnv> {
  return async function httpMetrics(c: Context<AppEnv>, next: Next) {
    await next();
    counter.inc({ method: c.req.method, route: c.res.status === 404 && !c.req.matchedRoutes.length ? 'unmatched' : routePath(c), status: String(c.res.status) });
  };
}
