import { createRoute, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Env, MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { JobView } from '../jobs/index.ts';
import { LedgerRecord, NetworkRecord } from '../pipeline/index.ts';
import { requireRole } from './middleware/auth.ts';
import { IDEMPOTENCY_ERRORS, IdempotencyHeaders } from './middleware/idempotency.ts';

// OpenAPI 3.1 generated from the routes themselves (@hono/zod-openapi): every
// route is declared with `route()` and registered with `app.openapi`, so its
// path, parameters, body schema, answers and roles are the ones it serves, and
// a route cannot exist without its documentation.

/**
 * A copy of `schema` that the document shows as the component `name`. Called
 * through the prototype: zod gives a schema its methods when it is created,
 * and the layers below may create theirs before @hono/zod-openapi adds `openapi`.
 */
export function named<T extends z.ZodType>(schema: T, name: string): T {
  return (z.ZodType.prototype as unknown as { openapi: (this: T, refId: string) => T }).openapi.call(schema, name);
}

/** Schemas used by several routes: components, referenced by name. */
export const ErrorBody = named(z.object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown() }) }), 'Error');
export const JobViewRef = named(JobView, 'JobView');
export const LedgerRecordRef = named(LedgerRecord, 'LedgerRecord');
/** A connection through the session's egress proxy, in the ledger next to the commands (POLICY.md §8). */
export const NetworkRecordRef = named(NetworkRecord, 'NetworkRecord');

/**
 * Who may call: `none` (no key), `any` key, `writer` (submitter, admin) or
 * `operator` (operator, admin). The role check is added to the route here,
 * so the document and the guard cannot disagree.
 */
export type Auth = 'none' | 'any' | 'writer' | 'operator';
const GUARD: Record<Auth, MiddlewareHandler[]> = {
  none: [], any: [], writer: [requireRole('submitter', 'admin')], operator: [requireRole('operator', 'admin')],
};

type Answer = RouteConfig['responses'][string];

/** A JSON answer. */
export const json = (schema: z.ZodType, description: string): Answer => ({ description, content: { 'application/json': { schema } } });
/**
 * A Server-Sent Events stream; `description` names its events. `events`, a union
 * discriminated on `event` (live-events.ts), documents each message's schema.
 */
export const sse = (description: string, events?: z.ZodType): Answer => ({
  description: events ? `${description}. Each SSE message's \`event:\` is the \`event\` field of the schema below and its \`data:\` is the JSON of \`data\`.` : description,
  content: { 'text/event-stream': { schema: events ?? z.string() } },
});
/** A body of another media type (text, HTML, bytes, a script …). */
export const media = (description: string, ...types: string[]): Answer => ({
  description, content: Object.fromEntries(types.map((t) => [t, { schema: z.string() }])),
});

type Spec<M extends RouteConfig['method'], P extends string, Req extends RouteConfig['request']> = {
  method: M;
  /** OpenAPI form, `{id}`; a hono pattern may follow the name (`{path{.*}}`: the rest of the path) */
  path: P;
  /** operationId: the name generated clients give the call */
  id: string;
  summary: string;
  auth: Auth;
  /** counted against a per-key cap (THINKFLOW_MAX_*_PER_KEY): may answer 429 `too_many` */
  capped?: true;
  /** writes to Redis: may answer 503 `storage_full` (Redis at maxmemory; nothing was written) */
  writes?: true;
  /** the route's own error answers, by status, each naming its code; joined to the generic answer of the same status */
  errors?: Record<number, string>;
  /** run after the role check, before validation (body limits, body reading) */
  middleware?: MiddlewareHandler[];
  /** the route's Idempotency-Key middleware (middleware/idempotency.ts), run after `middleware`; documents the header and its answers */
  idempotent?: MiddlewareHandler;
  request?: Req;
  /** the successful answer(s), by status */
  ok: Record<number, Answer>;
};

const error = (description: string): Answer => ({ description, content: { 'application/json': { schema: ErrorBody } } });

/**
 * Answers of every route, whatever its key, body or path (the origin guard
 * runs before routing, on `*`): declared once under components.responses and
 * referenced from every operation by documentOf. A route with a 403 of its
 * own spells the shared one out instead.
 */
const SHARED_403 = 'refused: the key lacks the role, or in dev mode the client is not on loopback (`forbidden`), a request from another origin (`cross_origin_refused`), or in dev mode a browser\'s write without X-ThinkFlow-Client (`client_header_required`)';
const ERROR_REF = { $ref: '#/components/schemas/Error' };
export const SHARED_RESPONSES = {
  HostNotAllowed: { description: 'dev mode: the Host is not a loopback name nor in THINKFLOW_ALLOWED_HOSTS (`host_not_allowed`)', content: { 'application/json': { schema: ERROR_REF } } },
  Refused: { description: SHARED_403, content: { 'application/json': { schema: ERROR_REF } } },
};
const shared = (name: keyof typeof SHARED_RESPONSES) => ({ $ref: `#/components/responses/${name}` });

/** The client errors a route can answer, all in the one error shape. */
function errorAnswers(s: { auth: Auth; capped?: true; writes?: true; errors?: Record<number, string>; path: string; request?: RouteConfig['request'] }): Record<string, Answer> {
  const validated = Boolean(s.request?.body || s.request?.query);
  const generic: Record<string, string> = {
    ...(s.auth !== 'none' ? { 401: 'no key, or an unknown key (`unauthorized`)' } : {}),
    ...(validated ? { 400: 'the request does not match its schema' } : {}),
    ...(s.request?.body ? { 413: 'the body is over its size limit (`payload_too_large`)' } : {}),
    ...(s.path.includes('{') ? { 404: 'no such resource (or not visible to the key)' } : {}),
    ...(s.capped ? { 429: 'the per-key cap is reached (`too_many`)' } : {}),
    ...(s.auth !== 'none' || s.writes ? { 503: unavailable(s.writes) } : {}),
    ...(s.errors?.[403] ? { 403: SHARED_403 } : {}),
    // Even routes without a key, a body or an id answer client errors in the one shape (another method: 404).
    ...(s.auth === 'none' ? { '4XX': 'a client error' } : {}),
  };
  for (const [status, description] of Object.entries(s.errors ?? {})) {
    generic[status] = generic[status] ? `${generic[status]}; or ${description}` : description;
  }
  return Object.fromEntries(Object.entries(generic).map(([k, d]) => [k, error(d)]));
}

/** 503s: Redis unreachable (middleware/redis-guard.ts) or a draining process, on every route with a key; a full Redis on writes. */
function unavailable(writes?: true): string {
  const down = 'Redis is unreachable (`redis_unavailable`), or this process is shutting down (`shutting_down`); retry';
  return writes ? `Redis is full (maxmemory): nothing was written; retry later (\`storage_full\`); or ${down}` : down;
}

type Operation = { responses?: Record<string, unknown> };

/** The shared answers on every operation of the document (mounted sub-apps' too), unless it spells one out. */
function withShared(paths: Record<string, Record<string, Operation>>): Record<string, Record<string, Operation>> {
  return Object.fromEntries(Object.entries(paths).map(([p, ops]) => [p, Object.fromEntries(Object.entries(ops).map(([m, op]) => [
    m, { ...op, responses: { ...op.responses, 421: op.responses?.[421] ?? shared('HostNotAllowed'), 403: op.responses?.[403] ?? shared('Refused') } },
  ]))]));
}

const PARAM = /\{(\w+)(?:\{[^}]*\})?\}/g;

/** What `route()` gives: the route's request schemas stay typed (for `c.req.valid`); any Response may answer. */
export type Route<M, P, Req> = Omit<RouteConfig, 'method' | 'path' | 'request' | 'responses'> & {
  method: M; path: P; request: Req extends undefined ? object : Req; responses: RouteConfig['responses'];
};

/** A documented route: the config `app.openapi(route(...), handler)` registers. */
export function route<M extends RouteConfig['method'], P extends string, Req extends RouteConfig['request'] = undefined>(s: Spec<M, P, Req>): Route<M, P, Req> {
  const names = [...s.path.matchAll(PARAM)].map((m) => m[1]!);
  const params = names.length ? z.object(Object.fromEntries(names.map((n) => [n, z.string()]))) : undefined;
  const errors = s.idempotent ? joinErrors(s.errors ?? {}, IDEMPOTENCY_ERRORS) : s.errors;
  return createRoute({
    method: s.method,
    path: s.path,
    operationId: s.id,
    summary: s.summary,
    ...(s.auth === 'none' ? { security: [] } : {}),
    middleware: [...GUARD[s.auth], ...(s.middleware ?? []), ...(s.idempotent ? [s.idempotent] : [])],
    request: { ...(params ? { params } : {}), ...(s.idempotent ? { headers: IdempotencyHeaders } : {}), ...s.request } as RouteConfig['request'],
    responses: { ...s.ok, ...errorAnswers({ ...s, ...(errors ? { errors } : {}) }) },
  }) as unknown as Route<M, P, Req>;
}

function joinErrors(a: Record<number, string>, b: Record<number, string>): Record<number, string> {
  const out = { ...a };
  for (const [status, text] of Object.entries(b)) out[Number(status)] = out[Number(status)] ? `${out[Number(status)]}; or ${text}` : text;
  return out;
}

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'ThinkFlow Sandbox API', version: '0.1.0', description: 'Runs AI-agent work unattended and safely.' },
  servers: [{ url: 'http://127.0.0.1:8080', description: 'the default listen address (PORT, HOST); use the address your deployment serves' }],
  security: [{ bearer: [] }],
};

/** The document of every route registered on `app` (mounted sub-apps included), built once. */
export function documentOf<E extends Env>(app: OpenAPIHono<E>): () => Record<string, unknown> {
  let cached: Record<string, unknown> | null = null;
  return () => {
    if (cached) return cached;
    app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
    for (const [name, answer] of Object.entries(SHARED_RESPONSES)) app.openAPIRegistry.registerComponent('responses', name, answer);
    const { paths = {}, components = {}, webhooks: _none, ...rest } = app.getOpenAPI31Document(DOCUMENT);
    const { parameters: _empty, ...shared } = components;
    // `{path{.*}}` routes the rest of the path; the document names it `{path}`.
    const named = withShared(Object.fromEntries(Object.entries(paths).map(([p, op]) => [p.replace(PARAM, '{$1}'), op])) as Record<string, Record<string, Operation>>);
    cached = { ...rest, components: shared, paths: named };
    return cached;
  };
}
