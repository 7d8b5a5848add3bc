import { Hono, type Context } from 'hono';
import { normalizeWorkspacePath } from '../../policy/index.ts';
import { runCommandsTurn } from '../../pipeline/api-turn.ts';
import { PipelineError } from '../../pipeline/errors.ts';
import type { Pipeline } from '../../pipeline/pipeline.ts';
import type { SessionMeta } from '../../pipeline/sessions.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { requireRole } from '../middleware/auth.ts';
import { maxBody } from '../middleware/limits.ts';
import { CreateSessionBody } from '../schemas.ts';
import { readJson } from '../validate.ts';
import { filePathOf } from './raw-path.ts';

export type SessionRoutesDeps = { pipeline: Pipeline; maxJsonBytes: number; maxCommandsBytes: number };

/** Loads a session the caller may see: a submitter sees only its own (404 for others', never 403). */
async function visibleSession(c: Context<AppEnv>, p: Pipeline): Promise<SessionMeta> {
  const sid = c.req.param('id') ?? '';
  const meta = await p.sessions.get(sid, true);
  const me = c.var.principal;
  if (!meta || (me.role === 'submitter' && meta.owner !== me.id)) {
    throw new AppError(404, 'session_not_found', `session ${sid} not found`);
  }
  return meta;
}

const writers = requireRole('submitter', 'admin');

export function sessionRoutes({ pipeline: p, maxJsonBytes, maxCommandsBytes }: SessionRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/', writers, maxBody(maxJsonBytes), async (c) => {
    const body = await readJson(c, CreateSessionBody, { emptyOk: true });
    const files = Object.entries(body.files ?? {});
    const bad = files.map(([path]) => ({ path, n: normalizeWorkspacePath(path) })).filter((f) => !f.n.ok);
    if (bad.length) {
      throw new AppError(400, 'invalid_files', 'file paths must stay inside the workspace', {
        details: bad.map((b) => ({ path: b.path, reason: b.n.ok ? '' : b.n.reason })),
      });
    }
    const meta = await p.createSession({
      owner: c.var.principal.id, project: body.project ?? null, approval: body.approval ?? 'never', policy: body.policy ?? null,
      tightenOnly: c.var.principal.role === 'submitter',
      ...(body.files ? { files: body.files } : {}),
    });
    if (files.length) {
      try {
        await p.seedFiles(meta.session_id, body.files!, c.req.raw.signal);
      } catch (err) {
        if (err instanceof PipelineError && err.code === 'seed_failed') {
          throw new AppError(422, 'seed_failed', `a file could not be written: ${err.message}`, { details: { session_id: meta.session_id, ...(err.details as object) } });
        }
        throw err;
      }
    }
    return c.json({ session_id: meta.session_id }, 201);
  });

  app.get('/:id', async (c) => {
    const meta = await visibleSession(c, p);
    const { policy: _policy, owner: _owner, ...shown } = meta;
    return c.json(shown);
  });

  app.post('/:id/commands', writers, maxBody(maxCommandsBytes), async (c) => {
    const meta = await visibleSession(c, p);
    if (meta.deleted_at) throw new AppError(410, 'session_deleted', `session ${meta.session_id} was deleted`);
    const type = c.req.header('content-type');
    if (type && !/^text\/plain\b/i.test(type)) throw new AppError(415, 'unsupported_media_type', `expected text/plain with tf-* tags, got ${type}`);
    const text = await c.req.text();
    const signal = c.req.raw.signal;
    await p.caps.claimLive(meta.owner, meta.session_id);
    try {
      const out = await runCommandsTurn(p, meta.session_id, text, { signal });
      return c.json({ results: out.results, errors: out.errors });
    } catch (err) {
      // The client went away while its turn ran: the turn goes on (the ledger
      // has it); there is nobody to answer, so do not log it as a failure.
      if (signal.aborted) return c.body(null, 499 as never);
      throw err;
    }
  });

  app.get('/:id/ledger', async (c) => {
    const meta = await visibleSession(c, p);
    return c.json({ entries: await p.entries(meta.session_id) });
  });

  const readFile = async (c: Context<AppEnv>) => {
    const meta = await visibleSession(c, p);
    // Its sandbox is gone; reading would silently create an empty new one.
    if (meta.deleted_at) throw new AppError(410, 'session_deleted', `session ${meta.session_id} was deleted`);
    const raw = filePathOf(c);
    const norm = normalizeWorkspacePath(raw === '' ? '.' : raw);
    if (!norm.ok) throw new AppError(403, 'path_outside_workspace', 'path is outside the workspace', { details: { path: raw } });
    const got = await p.executor.readPath(meta.session_id, norm.path);
    switch (got.kind) {
      case 'outside': throw new AppError(403, 'path_outside_workspace', 'path is outside the workspace', { details: { path: raw } });
      case 'missing': throw new AppError(404, 'not_found', `${norm.path}: no such file or directory`);
      case 'dir': return c.json({ entries: got.entries });
      case 'file':
        return c.body(new Uint8Array(got.bytes), 200, { 'content-type': 'application/octet-stream', 'content-length': String(got.bytes.length) });
    }
  };
  app.get('/:id/files', readFile);
  app.get('/:id/files/*', readFile);

  app.delete('/:id', writers, async (c) => {
    const meta = await visibleSession(c, p);
    await p.deleteSession(meta.session_id);
    return c.body(null, 204);
  });

  return app;
}
