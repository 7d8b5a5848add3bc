import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { z } from 'zod';
import { withIds } from '../../log/index.ts';
import { normalizeWorkspacePath } from '../../policy/index.ts';
import { CommandResult, parseTurnBody, PipelineError, runParsedTurn, SandboxCallError, turnItems, type IdempotencyStore, type Pipeline, type SessionMeta, type SessionState, type TurnItem } from '../../pipeline/index.ts';
import { ParseError } from '../../protocol/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError, toAppError } from '../errors.ts';
import { idempotent } from '../middleware/idempotency.ts';
import { maxBody } from '../middleware/limits.ts';
import type { TurnCaps } from '../stream-caps.ts';
import { json, LedgerRecordRef, NetworkRecordRef, route } from '../openapi.ts';
import { CreateSessionBody, DirectoryListing, SessionCreated, SessionView } from '../schemas.ts';
import { checkFilePaths, jsonBody } from '../validate.ts';
import { filePathOf } from './raw-path.ts';

// Sessions without a model (API.md): create, read, run tf-* tags as a turn,
// the ledger, the workspace's files, delete.

export type SessionRoutesDeps = { pipeline: Pipeline; maxJsonBytes: number; maxCommandsBytes: number; turns: TurnCaps; idempotency: IdempotencyStore };

/** Loads a session the caller may see: a submitter sees only its own (404 for others', never 403). */
export async function visibleSession(c: Context<AppEnv>, p: Pick<Pipeline, 'sessionMeta'>): Promise<SessionState> {
  const sid = c.req.param('id') ?? '';
  const meta = await p.sessionMeta(sid);
  const me = c.var.principal;
  if (!meta || (me.role === 'submitter' && meta.owner !== me.id)) {
    throw new AppError(404, 'session_not_found', `session ${sid} not found`);
  }
  return meta;
}

/** Its sandbox is gone: running or reading would silently create an empty new one. */
export function requireLive(meta: SessionMeta): void {
  if (meta.deleted_at) throw new AppError(410, 'session_deleted', `session ${meta.session_id} was deleted`);
}

/** What a route that reaches a sandbox can answer in an API-only process, whose sandboxes are the workers' (pipeline/sandbox-calls). */
export const CALL_ERRORS = {
  502: 'an answer over THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB from the worker (`sandbox_answer_too_large`)',
  503: "the session's sandbox did not answer, or no worker took the request within THINKFLOW_SANDBOX_CALL_PICKUP_MS (`sandbox_unavailable`); nothing was done, try again",
  504: 'a worker took the request but did not answer within THINKFLOW_SANDBOX_CALL_ANSWER_MS, or a transfer stalled (`sandbox_timeout`)',
};

/** What reading the workspace can answer besides the generic errors (every path 2xx or 4xx, a sandbox down 503). */
const FILE_ERRORS = {
  400: 'a loop of symbolic links (`invalid_path`)',
  403: 'the path leads outside the workspace (`path_outside_workspace`)',
  409: 'the path changed while it was read, e.g. a symlink swapped (`path_changed`); try again',
  410: 'the session was deleted (`session_deleted`)',
  ...CALL_ERRORS,
};

const routes = (d: SessionRoutesDeps) => ({
  create: route({
    method: 'post', path: '/', id: 'createSession', summary: 'A session without a model', auth: 'writer', capped: true, writes: true,
    errors: { 422: 'a seeded file could not be written (`seed_failed`)', ...CALL_ERRORS },
    middleware: [maxBody(d.maxJsonBytes), jsonBody({ emptyOk: true })], idempotent: idempotent(d.idempotency, { body: 'json' }),
    request: { body: { required: false, content: { 'application/json': { schema: CreateSessionBody } } } },
    ok: { 201: json(SessionCreated, 'the new session') },
  }),
  get: route({
    method: 'get', path: '/{id}', id: 'getSession', summary: 'A session: project, approval mode, job, timestamps', auth: 'any',
    ok: { 200: json(SessionView, 'the session') },
  }),
  commands: route({
    method: 'post', path: '/{id}/commands', id: 'runCommands', summary: 'Run tf-* tags as one turn', auth: 'writer', capped: true, writes: true,
    errors: {
      409: 'an upload into the workspace is in progress (`session_busy`): nothing of the turn was run',
      410: 'the session was deleted (`session_deleted`)',
      413: 'more than THINKFLOW_MAX_COMMANDS_PER_TURN commands in the body (`too_many_commands`, details.limit): nothing of the turn was run',
      415: 'the body is not text/plain (`unsupported_media_type`)',
      429: 'the key already has THINKFLOW_MAX_TURNS_PER_KEY turns running (`too_many`, details.cap names the setting)',
    },
    // The turn's slot first: a key's turns over its cap are refused before their bodies are read.
    middleware: [turnSlot(d.turns), maxBody(d.maxCommandsBytes)], idempotent: idempotent(d.idempotency, { body: 'text' }),
    request: { body: { required: true, content: { 'text/plain': { schema: z.string() } } } },
    ok: { 200: json(z.object({ results: z.array(CommandResult), errors: z.array(ParseError) }), 'every command final, in completion order') },
  }),
  ledger: route({
    method: 'get', path: '/{id}/ledger', id: 'getLedger', summary: 'The session ledger, in execution order', auth: 'any',
    ok: { 200: json(z.object({ entries: z.array(z.union([LedgerRecordRef, NetworkRecordRef])) }), 'the ledger: command records, and the network records (`tool: "network"`) of connections through the egress proxy after the command that made them') },
  }),
  root: route({
    method: 'get', path: '/{id}/files', id: 'listWorkspace', summary: 'The workspace root, listed', auth: 'any', capped: true, writes: true,
    errors: FILE_ERRORS,
    ok: { 200: json(DirectoryListing, 'the workspace root') },
  }),
  file: route({
    method: 'get', path: '/{id}/files/{path{.*}}', id: 'getFile', summary: "A workspace file's bytes, or a directory listing", auth: 'any', capped: true, writes: true,
    errors: FILE_ERRORS,
    ok: { 200: { description: "a file's bytes, or a directory's entries", content: { 'application/octet-stream': { schema: z.string() }, 'application/json': { schema: DirectoryListing } } } },
  }),
  remove: route({
    method: 'delete', path: '/{id}', id: 'deleteSession', summary: 'Remove the sandbox; the ledger and events stay readable for THINKFLOW_RETENTION_S, then expire', auth: 'writer', writes: true,
    errors: { 503: 'the sandbox could not be fully removed (`cleanup_failed`): the session stays, its caps held; try DELETE again' },
    ok: { 204: { description: 'removed' } },
  }),
});

export function sessionRoutes(d: SessionRoutesDeps): OpenAPIHono<AppEnv> {
  const p = d.pipeline;
  const r = routes(d);
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(r.create, async (c) => {
    const body = c.req.valid('json');
    checkFilePaths(body.files);
    const owner = c.var.principal.id;
    const seeds = body.files && Object.keys(body.files).length ? body.files : null;
    // Seeding starts the session's container: it takes a live slot first, like a job does.
    const taken = await p.takeSessionId(owner, seeds !== null);
    const sessionId = taken.id;
    let meta: SessionMeta;
    try {
      meta = await p.createSession({
        owner, sessionId, project: body.project ?? null, approval: body.approval ?? 'never', policy: body.policy ?? null,
        tightenOnly: c.var.principal.role === 'submitter',
        ...(body.files ? { files: body.files } : {}),
      });
    } catch (err) {
      await taken.undo();
      throw err;
    }
    if (seeds) await seed(p, meta.session_id, seeds, c.req.raw.signal);
    return c.json({ session_id: meta.session_id }, 201);
  });

  app.openapi(r.get, async (c) => {
    const { policy: _policy, owner: _owner, paused_at: _paused, ...shown } = await visibleSession(c, p);
    return c.json(shown, 200);
  });

  app.openapi(r.commands, (c) => runTurn(c, p));

  app.openapi(r.ledger, async (c) => {
    const meta = await visibleSession(c, p);
    return c.json({ entries: await p.ledgerEntries(meta.session_id) }, 200);
  });

  const readFile = (c: Context<AppEnv>) => readPath(c, p);
  app.openapi(r.root, readFile);
  app.openapi(r.file, readFile);

  app.openapi(r.remove, async (c) => {
    const meta = await visibleSession(c, p);
    await p.deleteSession(meta.session_id);
    return c.body(null, 204);
  });

  return app;
}

async function seed(p: Pipeline, sid: string, files: Record<string, string>, signal: AbortSignal): Promise<void> {
  try {
    await p.seedFiles(sid, files, signal);
  } catch (err) {
    if (err instanceof PipelineError && err.code === 'seed_failed') {
      throw new AppError(422, 'seed_failed', `a file could not be written: ${err.message}`, { details: { session_id: sid, ...(err.details as object) } });
    }
    throw err;
  }
}

/** The body's tf-* tags as one turn; answered when every command is final. */
async function runTurn(c: Context<AppEnv>, p: Pipeline): Promise<Response> {
  // A session this process knows (its key never changes) is opened without reading it first: its state comes with
  // the turn's number (Pipeline.openTurn). Refusals keep the API's order: 404, 410, 415, too_many_commands, 409, 429.
  const known = knownVisible(c, p);
  const meta = known ?? (await visibleSession(c, p));
  if (!known) requireLive(meta);
  const type = c.req.header('content-type');
  let items: TurnItem[];
  try {
    if (type && !/^text\/plain\b/i.test(type)) throw new AppError(415, 'unsupported_media_type', `expected text/plain with tf-* tags, got ${type}`);
    // Parsed (and counted) before anything is claimed or recorded.
    items = turnItems(parseTurnBody(await c.req.text(), p.maxCommandsPerTurn, p.parserOptions));
  } catch (err) {
    if (known) requireLive(await visibleSession(c, p)); // a deleted or gone session is said first
    throw err;
  }
  const sid = meta.session_id;
  const opened = await p.openTurn(sid, meta.owner);
  const signal = c.req.raw.signal;
  // A container paused while idle thaws while the commands are recorded and queued.
  if (opened.pausedAt !== null) p.prewake(sid, { ...meta, paused_at: opened.pausedAt });
  try {
    const out = await runParsedTurn(p, sid, items, signal, opened);
    return c.json({ results: out.results, errors: out.errors }, 200);
  } catch (err) {
    // The client went away while its turn ran: the turn goes on (the ledger
    // has it); there is nobody to answer, so do not log it as a failure.
    if (signal.aborted) return c.body(null, 499 as never);
    throw err;
  }
}

/** The session as this process remembers it, when the caller may see it; null: read it (visibleSession). */
function knownVisible(c: Context<AppEnv>, p: Pipeline): SessionMeta | null {
  const known = p.rememberedSession(c.req.param('id') ?? '');
  const me = c.var.principal;
  return known && !(me.role === 'submitter' && known.owner !== me.id) ? known : null;
}

/** A workspace file's bytes or a directory's entries, judged on the raw request path (raw-path.ts). */
async function readPath(c: Context<AppEnv>, p: Pipeline): Promise<Response> {
  const meta = await visibleSession(c, p);
  requireLive(meta);
  const raw = filePathOf(c);
  const norm = normalizeWorkspacePath(raw === '' ? '.' : raw);
  const outside = () => new AppError(403, 'path_outside_workspace', 'path is outside the workspace', { details: { path: raw } });
  if (!norm.ok) throw outside();
  // Reading starts the session's container when it is stopped: a live slot first (no side door around the cap).
  await p.live.claimLive(meta.owner, meta.session_id);
  p.prewake(meta.session_id, meta);
  const got = await readInSandbox(p, meta.session_id, norm.path);
  switch (got.kind) {
    case 'outside': throw outside();
    case 'missing': throw new AppError(404, 'not_found', `${norm.path}: no such file or directory`);
    case 'unreadable':
      if (got.loop) throw new AppError(400, 'invalid_path', `${norm.path}: a loop of symbolic links`, { details: { path: norm.path } });
      throw new AppError(409, 'path_changed', `${norm.path} changed while it was read (${got.reason}); try again`, { details: { path: norm.path } });
    case 'dir': return c.json({ entries: got.entries });
    case 'file':
      return c.body(new Uint8Array(got.bytes), 200, { 'content-type': 'application/octet-stream', 'content-length': String(got.bytes.length) });
  }
}

/** The sandbox's answer; a sandbox that cannot be reached is a 503 the client may retry, not an internal error. */
async function readInSandbox(p: Pipeline, sid: string, path: string): ReturnType<Pipeline['sandboxes']['readPath']> {
  try {
    return await p.sandboxes.readPath(sid, path);
  } catch (err) {
    const call = err instanceof SandboxCallError ? toAppError(err) : null;
    if (call) throw call;
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('sandbox_')) {
      withIds({ session_id: sid }).warn({ err, path }, 'files: the sandbox did not answer a read');
      throw new AppError(503, 'sandbox_unavailable', `the session's sandbox did not answer (${code}); try again`, { details: { session_id: sid }, cause: err });
    }
    throw err;
  }
}

/** Holds one of the key's turn slots (THINKFLOW_MAX_TURNS_PER_KEY) until the turn is answered. */
function turnSlot(turns: TurnCaps): MiddlewareHandler<AppEnv> {
  return async function turnSlot(c: Context<AppEnv>, next: Next) {
    const release = turns.acquire(c.var.principal.id);
    try {
      await next();
    } finally {
      release();
    }
  };
}
