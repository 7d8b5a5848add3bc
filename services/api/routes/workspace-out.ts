import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { withIds } from '../../log/index.ts';
import { SandboxCallError, type Pipeline, type WorkspaceOut } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError, toAppError } from '../errors.ts';
import { media, route } from '../openapi.ts';
import { CALL_ERRORS, requireLive, visibleSession } from './sessions.ts';

// The workspace out (API.md additions 2026-12-01): the archive, and the
// changes against the baseline as a list or a git patch. Both are made in
// the sandbox and streamed through: the service holds a socket's worth of a
// workspace, never all of it (bench/workspace measures it).

export type WorkspaceOutDeps = { pipeline: Pipeline };

const Change = z.object({ path: z.string(), change: z.enum(['added', 'modified', 'deleted']), bytes: z.number().int().nonnegative() });
const ChangeList = z.object({
  baseline_at: z.string().nullable().meta({ description: 'when the baseline was taken (after seeding or the last upload, or right before the first command); null: none yet, nothing ran' }),
  changes: z.array(Change),
});

const SANDBOX_ERRORS = {
  409: 'no baseline could be kept for this workspace (`baseline_unavailable`, the message says why), or the workspace changed while it was read (`workspace_changed`); try again',
  410: 'the session was deleted (`session_deleted`)',
  ...CALL_ERRORS,
};

const routes = {
  archive: route({
    method: 'get', path: '/{id}/workspace', id: 'getWorkspace', summary: 'The workspace as a gzip\'d tar (or a plain tar), streamed', auth: 'any', capped: true, writes: true,
    errors: SANDBOX_ERRORS,
    request: { query: z.strictObject({ format: z.enum(['tar.gz', 'tar']).default('tar.gz').meta({ description: '`tar` for a plain tar' }) }) },
    ok: { 200: media('the workspace; symlinks are archived as symlinks, never followed', 'application/gzip', 'application/x-tar') },
  }),
  changes: route({
    method: 'get', path: '/{id}/changes', id: 'getChanges', summary: 'What changed since the baseline: a list, or a git patch', auth: 'any', capped: true, writes: true,
    errors: SANDBOX_ERRORS,
    request: { query: z.strictObject({ format: z.enum(['json', 'patch']).default('json').meta({ description: '`patch`: a unified diff `git apply` accepts, binary files as git binary patches' }) }) },
    ok: { 200: { description: 'the changed paths (`.git` and directories are not listed), or the patch', content: { 'application/json': { schema: ChangeList }, 'text/x-diff': { schema: z.string() } } } },
  }),
};

export function workspaceOutRoutes(d: WorkspaceOutDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(routes.archive, async (c) => {
    const { sid, out } = await reachable(c, d.pipeline);
    const format = c.req.valid('query').format;
    const body = await answerOf(sid, () => out.archive(sid, format));
    const name = `${sid}.${format}`;
    return streamed(c, sid, body, { 'content-type': format === 'tar' ? 'application/x-tar' : 'application/gzip', 'content-disposition': `attachment; filename="${name}"` });
  });

  app.openapi(routes.changes, async (c) => {
    const { sid, out } = await reachable(c, d.pipeline);
    if (c.req.valid('query').format === 'json') return c.json(await answerOf(sid, () => out.changes(sid)), 200);
    const body = await answerOf(sid, () => out.patch(sid));
    return streamed(c, sid, body, { 'content-type': 'text/x-diff; charset=utf-8', 'content-disposition': `attachment; filename="${sid}.patch"` });
  });

  return app;
}

/** The caller's live session and its sandbox's workspace; reading may start the container, so the key's live slot first. */
async function reachable(c: Context<AppEnv>, p: Pipeline): Promise<{ sid: string; out: WorkspaceOut }> {
  const meta = await visibleSession(c, p);
  requireLive(meta);
  const out = p.sandboxes.workspace;
  if (!out) throw new AppError(503, 'sandbox_unavailable', 'this service has no sandbox workspaces to read');
  await p.live.claimLive(meta.owner, meta.session_id);
  return { sid: meta.session_id, out };
}

/**
 * Sends the sandbox's stream as the body. Under @hono/node-server it is
 * piped into the socket itself (a quarter less CPU than through a web
 * stream, bench/workspace), with the headers hono prepared (the origin
 * guard's CORS ones) merged in; elsewhere (app.request) as a web stream.
 * Once the headers are out a failure can only cut the body short, which the
 * client sees as an incomplete transfer; it is logged.
 */
function streamed(c: Context<AppEnv>, sid: string, body: Readable, headers: Record<string, string>): Response {
  const failed = (err: Error) => withIds({ session_id: sid }).warn({ err }, 'workspace out: the stream failed midway');
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing || typeof outgoing.writeHead !== 'function') {
    body.once('error', failed);
    return c.body(Readable.toWeb(body) as ReadableStream<Uint8Array>, 200, headers);
  }
  const prepared = c.body(null, 200, headers);
  outgoing.writeHead(200, Object.fromEntries(prepared.headers));
  // A client that goes away (premature close) destroys the body too, which ends the program in the sandbox: not a failure.
  pipeline(body, outgoing).catch((err: Error & { code?: string }) => {
    if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE') failed(err);
  });
  return RESPONSE_ALREADY_SENT;
}

/** The sandbox's answer, its refusals as the API's errors. */
async function answerOf<T>(sid: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const call = err instanceof SandboxCallError ? toAppError(err) : null;
    if (call) throw call;
    const code = (err as { code?: unknown }).code;
    const message = (err as Error).message;
    if (code === 'baseline_failed' || code === 'baseline_unsupported') {
      throw new AppError(409, 'baseline_unavailable', message, { details: { session_id: sid }, cause: err });
    }
    if (code === 'workspace_changed') throw new AppError(409, 'workspace_changed', message, { details: { session_id: sid }, cause: err });
    if (typeof code === 'string' && code.startsWith('sandbox_')) {
      withIds({ session_id: sid }).warn({ err }, 'workspace out: the sandbox did not answer');
      throw new AppError(503, 'sandbox_unavailable', `the session's sandbox did not answer (${code}); try again`, { details: { session_id: sid }, cause: err });
    }
    throw err;
  }
}
