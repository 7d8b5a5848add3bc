import type { Context, MiddlewareHandler, Next } from 'hono';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

// Browsers are the one client that a third party can drive: any page the user
// opens can send forms and no-cors fetches to 127.0.0.1, and a DNS-rebinding
// page can even read the answers, because the browser then thinks the API is
// the attacker's own origin. Curl and the CLI send neither `Origin` nor
// `Sec-Fetch-Site`, so everything here leaves them alone.
//
// - Dev mode (no keys, every loopback caller is admin): the `Host` must be a
//   loopback name or one of `allowedHosts` (closes DNS rebinding), and a
//   browser's state-changing request needs `X-ThinkFlow-Client`, a header a
//   cross-origin form cannot send and a cross-origin fetch cannot send
//   without a preflight that is refused.
// - Both modes: a request from another origin (its `Origin`, or
//   `Sec-Fetch-Site` cross-site/same-site) is refused unless its origin is one
//   of `corsOrigins`, which also get CORS answers. A top-level GET navigation
//   (a link to the dashboard) reads nothing for the linking page and passes.

export const CLIENT_HEADER = 'x-thinkflow-client';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const CORS_HEADERS = 'authorization, content-type, last-event-id, x-thinkflow-client';
const CORS_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';

export type OriginGuardOptions = {
  /** dev mode: no API keys */
  devMode: boolean;
  /** extra `Host` names dev mode answers (THINKFLOW_ALLOWED_HOSTS), lower case, `name` or `name:port` */
  allowedHosts: readonly string[];
  /** exact origins that may call cross-origin (THINKFLOW_CORS_ORIGINS), e.g. `https://ops.example` */
  corsOrigins: readonly string[];
};

/** `Host` → its name without the port (`[::1]:8080` → `[::1]`), lower case; null when it is no host[:port]. */
export function hostName(host: string): string | null {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]/@\s]+)(?::\d{1,5})?$/.exec(host.toLowerCase());
  return m ? m[1]! : null;
}

/**
 * Whether `origin` (scheme://host[:port]) is the origin the request was sent
 * to (its `Host`). The scheme is not compared: behind a TLS proxy the service
 * sees http while the page is https, and one host:port serves one scheme.
 */
export function sameOrigin(origin: string, host: string): boolean {
  try {
    const o = new URL(origin);
    if (o.origin !== origin.toLowerCase().replace(/\/$/, '')) return false;
    // Parsed with the origin's scheme so a default port compares equal (`http://x` vs `x:80`).
    return new URL(`${o.protocol}//${host}`).host === o.host;
  } catch {
    return false; // `null`, or not a URL: an opaque origin is never ours
  }
}

/**
 * Host, origin and client-header checks, before authentication (a refused
 * preflight or rebinding request never reaches a route).
 * @example app.use('*', originGuard({ devMode: !keys, allowedHosts: [], corsOrigins: [] }))
 */
export function originGuard({ devMode, allowedHosts, corsOrigins }: OriginGuardOptions): MiddlewareHandler<AppEnv> {
  const extraHosts = new Set(allowedHosts.map((h) => h.toLowerCase()));
  const cors = new Set(corsOrigins);
  return async function originGuard(c: Context<AppEnv>, next: Next) {
    // No Host header only in-process (app.request); @hono/node-server refuses such a request.
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    const name = hostName(host);
    if (devMode && (name === null || !(LOOPBACK_NAMES.has(name) || extraHosts.has(name) || extraHosts.has(host.toLowerCase())))) {
      throw new AppError(421, 'host_not_allowed', `dev mode answers loopback host names only (localhost, 127.0.0.1, [::1]); add others to THINKFLOW_ALLOWED_HOSTS`, { details: { host } });
    }
    const origin = c.req.header('origin');
    const site = c.req.header('sec-fetch-site');
    const method = c.req.method.toUpperCase();
    const foreign = (origin !== undefined && !sameOrigin(origin, host)) || site === 'cross-site' || site === 'same-site';
    const allowed = origin !== undefined && cors.has(origin);
    if (foreign && !allowed && !isNavigation(c, method)) {
      throw new AppError(403, 'cross_origin_refused', 'requests from other origins are refused (THINKFLOW_CORS_ORIGINS lists the ones allowed)', { details: { origin: origin ?? null, sec_fetch_site: site ?? null } });
    }
    if (allowed && method === 'OPTIONS' && c.req.header('access-control-request-method')) {
      return c.body(null, 204, { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-allow-methods': CORS_METHODS, 'access-control-allow-headers': CORS_HEADERS, 'access-control-max-age': '600' });
    }
    const browser = origin !== undefined || site !== undefined;
    if (devMode && browser && !SAFE_METHODS.has(method) && !c.req.header(CLIENT_HEADER)) {
      throw new AppError(403, 'client_header_required', `dev mode: a browser's ${method} needs the ${CLIENT_HEADER} header (the dashboard sends it)`);
    }
    if (allowed) c.header('access-control-allow-origin', origin);
    if (cors.size > 0) c.header('vary', 'Origin', { append: true });
    return next();
  };
}

/** A link followed to a page: the linking page cannot read the answer. */
function isNavigation(c: Context, method: string): boolean {
  return (method === 'GET' || method === 'HEAD') && c.req.header('sec-fetch-mode') === 'navigate' && c.req.header('origin') === undefined;
}
