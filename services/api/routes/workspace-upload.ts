import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { Readable, Transform } from 'node:stream';
import { z } from 'zod';
import { withIds } from '../../log/index.ts';
import { uploadWorkspace, type Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError, toAppError } from '../errors.ts';
import { answerThenLinger, nodeOf } from '../middleware/limits.ts';
import { json, route } from '../openapi.ts';
import { CALL_ERRORS, visibleSession } from './sessions.ts';

// PUT /v1/sessions/:id/workspace (API.md, additions 2026-12-01): a tar or
// gzip'd tar streamed from the request into the session's sandbox, where it
// is extracted as the command user, all or nothing. The body is never held
// whole here: it flows through a byte counter (THINKFLOW_MAX_UPLOAD_MB) into
// `docker exec` (pipeline/workspace-upload.ts, sandbox/workspace-upload.ts).

export type WorkspaceUploadDeps = { pipeline: Pipeline; maxUploadBytes: number };

const TYPES = new Set(['application/x-tar', 'application/gzip', 'application/x-gzip']);
const UploadAnswer = z.object({
  files: z.number().int().meta({ description: 'regular files and symbolic links written' }),
  bytes: z.number().int().meta({ description: 'bytes of the regular files' }),
});
const binary = { schema: z.string().meta({ format: 'binary' }) };

const uploadRoute = route({
  method: 'put', path: '/{id}/workspace', id: 'uploadWorkspace', summary: 'Extract a tar or tar.gz into the workspace, all or nothing', auth: 'writer', capped: true, writes: true,
  errors: {
    400: 'an entry that is absolute, holds `..`, links outside the workspace, or is a hard link, device or FIFO, or a truncated or corrupt archive (`invalid_archive`, details.entry); a path the policy does not allow as a write (`invalid_files`, details.rule)',
    409: 'a command, job or another upload runs on the session (`session_busy`); an entry conflicts with the workspace, e.g. a file where a directory is (`workspace_conflict`)',
    410: 'the session was deleted (`session_deleted`)',
    413: 'over THINKFLOW_MAX_UPLOAD_MB (`payload_too_large`), or the archive expands past the workspace quota (`workspace_full`); nothing was written',
    415: 'the body is not application/x-tar or application/gzip (`unsupported_media_type`)',
    ...CALL_ERRORS,
    502: 'the extraction failed in the sandbox (`upload_failed`); nothing was written',
  },
  request: { body: { required: true, content: { 'application/x-tar': binary, 'application/gzip': binary } } },
  ok: { 200: json(UploadAnswer, 'the archive is in the workspace; `files_seeded` was emitted') },
});

export function workspaceUploadRoutes(d: WorkspaceUploadDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(uploadRoute, (c) => upload(c, d));
  return app;
}

const tooLarge = (max: number) => new AppError(413, 'payload_too_large', `request body over ${max} bytes (THINKFLOW_MAX_UPLOAD_MB)`, { details: { max_bytes: max } });

async function upload(c: Context<AppEnv>, d: WorkspaceUploadDeps): Promise<Response> {
  const p = d.pipeline;
  const meta = await visibleSession(c, p);
  if (meta.deleted_at) throw new AppError(410, 'session_deleted', `session ${meta.session_id} was deleted`);
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!TYPES.has(type)) throw new AppError(415, 'unsupported_media_type', `expected application/x-tar or application/gzip, got ${type || 'no content-type'}`);
  const node = nodeOf(c);
  const declared = Number(c.req.header('content-length') ?? NaN);
  if (declared > d.maxUploadBytes) {
    if (node) return answerThenLinger(node, 413, tooLarge(d.maxUploadBytes).toBody());
    throw tooLarge(d.maxUploadBytes);
  }
  // Extraction starts the session's container: a live slot first, as for any command.
  await p.live.claimLive(meta.owner, meta.session_id);
  const body = cappedBody(c, d.maxUploadBytes);
  let answer: { status: number; payload: unknown };
  try {
    answer = { status: 200, payload: await uploadWorkspace(p, meta.session_id, body.stream) };
  } catch (err) {
    const known = asAppError(err, meta.session_id);
    if (!known) {
      if (!node || body.complete()) throw err;
      withIds({ session_id: meta.session_id }).error({ err }, 'workspace upload failed');
      body.release();
      return answerThenLinger(node, 500, { error: { code: 'internal', message: 'internal error', details: null } });
    }
    answer = { status: known.status, payload: known.toBody() };
  }
  // An answer before the whole body arrived (a refusal, or trailing bytes after the archive's end).
  if (node && !body.complete()) {
    body.release();
    return answerThenLinger(node, answer.status, answer.payload);
  }
  return c.json(answer.payload as object, answer.status as 200);
}

/** Pipeline errors as their answers; a sandbox that cannot be reached is a 503 the client may retry. */
function asAppError(err: unknown, sid: string): AppError | null {
  const known = toAppError(err);
  if (known) return known;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('sandbox_')) {
    withIds({ session_id: sid }).warn({ err }, 'workspace upload: the sandbox did not answer');
    return new AppError(503, 'sandbox_unavailable', `the session's sandbox did not answer (${code}); try again`, { details: { session_id: sid }, cause: err });
  }
  return null;
}

/**
 * The request body as a stream that fails with a 413 past `max` bytes;
 * `complete` says whether it was read to its end, `release` stops feeding the
 * stream (before the rest is discarded).
 */
function cappedBody(c: Context<AppEnv>, max: number): { stream: Readable; complete(): boolean; release(): void } {
  const node = nodeOf(c);
  let seen = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > max ? tooLarge(max) : null, chunk);
    },
  });
  if (!node) {
    const web = c.req.raw.body;
    counter.on('error', () => {}); // reported to whoever reads the stream; this keeps an early one from being unhandled
    if (web) Readable.fromWeb(web as import('node:stream/web').ReadableStream).pipe(counter);
    else counter.end();
    return { stream: counter, complete: () => true, release: () => counter.destroy() };
  }
  const { incoming } = node;
  incoming.on('error', (err) => counter.destroy(new AppError(400, 'invalid_body', `the request body ended early: ${err.message}`, { cause: err })));
  incoming.on('close', () => {
    if (!incoming.readableEnded) counter.destroy(new AppError(400, 'invalid_body', 'the client went away before the body ended'));
  });
  incoming.pipe(counter);
  // A counter that failed stops reading; the rest is discarded by the lingering answer.
  counter.on('error', () => incoming.unpipe(counter));
  return {
    stream: counter,
    complete: () => incoming.readableEnded,
    release: () => {
      incoming.unpipe(counter);
      counter.destroy();
    },
  };
}
