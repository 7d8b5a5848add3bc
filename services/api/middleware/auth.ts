import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler, Next } from 'hono';
import type { ApiKeys, Role } from '../../config/index.ts';
import type { AppEnv, Principal } from '../env.ts';
import { AppError } from '../errors.ts';

/** The remote address as Node saw it (`c.env.incoming` is set by @hono/node-server). */
export function remoteAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** A key's identity: a digest, so ledgers and logs never hold the key itself. */
export const principalId = (key: string) => `key-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

/**
 * Bearer-key authentication. With keys, every request outside `publicPaths`
 * needs a known key (401 otherwise). Without keys (dev mode) every caller is
 * admin, but only from loopback (403 otherwise).
 * @example app.use('*', auth({ keys: config.apiKeys }))
 */
export function auth({ keys, names = new Map(), publicPaths = ['/healthz', '/readyz', '/openapi.json'], publicPrefixes = [] }: {
  keys: ApiKeys | null; names?: Map<string, string>; publicPaths?: string[];
  /** e.g. the dashboard's page and assets, which hold no data: the page signs in with a key itself */
  publicPrefixes?: string[];
}): MiddlewareHandler<AppEnv> {
  const digests = keys ? [...keys].map(([k, role]) => ({ digest: createHash('sha256').update(k).digest(), key: k, role, name: names.get(k) ?? principalId(k) })) : [];
  return async function auth(c: Context<AppEnv>, next: Next) {
    if (publicPaths.includes(c.req.path) || publicPrefixes.some((p) => c.req.path === p || c.req.path.startsWith(`${p}/`))) return next();
    if (!keys) {
      const addr = remoteAddress(c);
      if (!addr || !LOOPBACK.test(addr)) throw new AppError(403, 'forbidden', 'dev mode (no THINKFLOW_API_KEYS) accepts loopback clients only');
      c.set('principal', { id: 'dev', role: 'admin', name: 'dev' });
      return next();
    }
    const header = c.req.header('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new AppError(401, 'unauthorized', 'missing or malformed Authorization: Bearer <key>');
    // Compare digests in constant time so response timing says nothing about keys.
    const d = createHash('sha256').update(m[1]!).digest();
    const hit = digests.find((x) => timingSafeEqual(x.digest, d));
    if (!hit) throw new AppError(401, 'unauthorized', 'unknown API key');
    c.set('principal', { id: principalId(hit.key), role: hit.role, name: hit.name });
    return next();
  };
}

/**
 * Route guard by role.
 * @example app.get('/metrics', requireRole('operator', 'admin'), handler)
 */
export function requireRole(...roles: Role[]): MiddlewareHandler<AppEnv> {
  return async function requireRole(c: Context<AppEnv>, next: Next) {
    const p: Principal = c.var.principal;
    if (!roles.includes(p.role)) throw new AppError(403, 'forbidden', `this route needs role ${roles.join(' or ')}; the key has ${p.role}`);
    return next();
  };
}
