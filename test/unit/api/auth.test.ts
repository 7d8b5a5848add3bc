import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../../../services/api/env.ts';
import { AppError } from '../../../services/api/errors.ts';
import { auth, principalId, requireRole } from '../../../services/api/middleware/auth.ts';

// The auth middleware through a real hono app (app.request), no server.
function app(keys: Map<string, 'submitter' | 'operator' | 'admin'> | null, remote?: string, names?: Map<string, string>) {
  const a = new Hono<AppEnv>();
  a.use('*', auth({ keys, names, publicPrefixes: ['/dashboard'] }));
  a.get('/dashboard/assets/x', (c) => c.text('asset'));
  a.get('/healthz', (c) => c.text('ok'));
  a.get('/who', (c) => c.json(c.var.principal));
  a.get('/ops', requireRole('operator', 'admin'), (c) => c.text('ops'));
  a.onError((err, c) => (err instanceof AppError ? c.json(err.toBody(), err.status) : c.text('boom', 500)));
  const env = remote ? { incoming: { socket: { remoteAddress: remote } } } : undefined;
  return (path: string, key?: string) => a.request(path, { headers: key ? { authorization: `Bearer ${key}` } : {} }, env);
}

describe('auth middleware', () => {
  const keys = new Map([['s-key', 'submitter' as const], ['o-key', 'operator' as const]]);

  it('lets public paths through and asks a key elsewhere', async () => {
    const req = app(keys);
    expect((await req('/healthz')).status).toBe(200);
    const r = await req('/who');
    expect(r.status).toBe(401);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    expect((await req('/who', 'wrong')).status).toBe(401);
  });

  it('identifies a key by digest, never by the key itself', async () => {
    const body = await (await app(keys)('/who', 's-key')).json();
    expect(body).toEqual({ id: principalId('s-key'), role: 'submitter', name: principalId('s-key') });
    expect(JSON.stringify(body)).not.toContain('s-key');
  });

  it('names a key by its configured name, keeping the digest as its identity', async () => {
    const body = await (await app(keys, undefined, new Map([['o-key', 'alice']]))('/who', 'o-key')).json();
    expect(body).toEqual({ id: principalId('o-key'), role: 'operator', name: 'alice' });
  });

  it('lets the dashboard page and assets through without a key (they hold no data)', async () => {
    expect((await app(keys)('/dashboard/assets/x')).status).toBe(200);
    expect((await app(keys)('/dashboardx')).status).toBe(401);
  });

  it('guards routes by role', async () => {
    expect((await app(keys)('/ops', 's-key')).status).toBe(403);
    expect((await app(keys)('/ops', 'o-key')).status).toBe(200);
  });

  it('dev mode: admin from loopback, refused from anywhere else or unknown', async () => {
    expect(await (await app(null, '127.0.0.1')('/who')).json()).toEqual({ id: 'dev', role: 'admin', name: 'dev' });
    expect((await app(null, '::ffff:127.0.0.1')('/ops')).status).toBe(200);
    expect((await app(null, '10.1.2.3')('/who')).status).toBe(403);
    expect((await app(null)('/who')).status).toBe(403);
  });
});
