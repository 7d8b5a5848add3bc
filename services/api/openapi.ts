import { z } from 'zod';
import { JobRequest, JobView, SubmitResponse } from '../jobs/job-schemas.ts';
import { LedgerRecord } from '../pipeline/ledger-record.ts';
import { ParseError } from '../protocol/command.ts';
import { AnswerApprovalBody, CreateSessionBody } from './schemas.ts';

// OpenAPI 3.1 generated from the same zod schemas that validate requests: the
// route table below is the only hand-written part.

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown() }) });
const CommandResult = z.object({
  id: z.string(), tool: z.string(), status: z.string(),
  error: z.string().optional(), code: z.string().optional(), exit_code: z.number().optional(), stdout: z.string().optional(), stderr: z.string().optional(), bytes_written: z.number().optional(),
});
const MatchedRule = z.object({ id: z.string(), layer: z.string(), decision: z.enum(['allow', 'prompt', 'forbid']), justification: z.string() });
const Approval = z.object({
  token: z.string(), session_id: z.string(), job_id: z.string().nullable(), command_id: z.string(), tool: z.string(), target: z.string(),
  matched_rules: z.array(MatchedRule), justification: z.string().nullable(), created_at: z.string(), expires_at: z.string(),
  /** what approve_for_session grants per scope (exact always; prefix when offered, else `unavailable` says why) */
  grant_options: z.array(z.object({ scope: z.enum(['exact', 'prefix']), covers: z.string().nullable(), unavailable: z.string().optional() })),
});

/** A plain JSON Schema (refs to the shared components) instead of a zod schema. */
type JsonSchema = { json: Record<string, unknown> };
type Route = {
  method: 'get' | 'post' | 'delete';
  path: string;
  /** operationId: the name generated clients give the call */
  id: string;
  summary: string;
  auth: 'none' | 'any' | 'operator';
  body?: z.ZodType;
  bodyType?: string;
  /** counted against a per-key cap (THINKFLOW_MAX_*_PER_KEY): may answer 429 `too_many` */
  capped?: true;
  ok: [number, z.ZodType | JsonSchema | 'text' | 'html' | 'bytes' | 'sse' | null];
};

// Schemas used by several routes are components, referenced by name.
const COMPONENTS = { JobView, LedgerRecord, Error: ErrorBody } as const;
const ref = (name: keyof typeof COMPONENTS) => ({ $ref: `#/components/schemas/${name}` });
const listOf = (key: string, name: keyof typeof COMPONENTS): JsonSchema => ({
  json: { type: 'object', properties: { [key]: { type: 'array', items: ref(name) } }, required: [key] },
});

const ROUTES: Route[] = [
  { method: 'post', path: '/v1/jobs', id: 'submitJob', capped: true, summary: 'Submit an unattended job', auth: 'any', body: JobRequest, ok: [202, SubmitResponse] },
  { method: 'get', path: '/v1/jobs', id: 'listJobs', summary: 'Jobs, newest first (a submitter sees its own); ?limit=&status=', auth: 'any', ok: [200, listOf('jobs', 'JobView')] },
  { method: 'get', path: '/v1/jobs/{job_id}', id: 'getJob', summary: 'A job: status and figures', auth: 'any', ok: [200, { json: ref('JobView') }] },
  { method: 'get', path: '/v1/jobs/{job_id}/events', id: 'streamJobEvents', capped: true, summary: 'Server-Sent Events, resumable with Last-Event-ID', auth: 'any', ok: [200, 'sse'] },
  { method: 'post', path: '/v1/jobs/{job_id}/cancel', id: 'cancelJob', summary: 'Stop the model, skip the queue', auth: 'any', ok: [202, { json: ref('JobView') }] },
  {
    method: 'get', path: '/v1/jobs/{job_id}/webhook-deliveries', id: 'listWebhookDeliveries', summary: 'Every webhook delivery attempt of the job', auth: 'any',
    ok: [200, z.object({ deliveries: z.array(z.object({ attempt: z.number(), at: z.string(), status_code: z.number().optional(), error: z.string().optional(), ok: z.boolean() })) })],
  },
  { method: 'post', path: '/v1/sessions', id: 'createSession', capped: true, summary: 'A session without a model', auth: 'any', body: CreateSessionBody, ok: [201, z.object({ session_id: z.string() })] },
  { method: 'get', path: '/v1/sessions/{id}', id: 'getSession', summary: 'A session: project, approval mode, job, timestamps', auth: 'any', ok: [200, z.object({ session_id: z.string() }).loose()] },
  { method: 'get', path: '/v1/sessions/{id}/events', id: 'streamSessionEvents', capped: true, summary: "The session's events as SSE, resumable with Last-Event-ID", auth: 'any', ok: [200, 'sse'] },
  { method: 'post', path: '/v1/sessions/{id}/commands', id: 'runCommands', capped: true, summary: 'Run tf-* tags as one turn', auth: 'any', bodyType: 'text/plain', ok: [200, z.object({ results: z.array(CommandResult), errors: z.array(ParseError) })] },
  { method: 'get', path: '/v1/sessions/{id}/ledger', id: 'getLedger', summary: 'The session ledger, in execution order', auth: 'any', ok: [200, listOf('entries', 'LedgerRecord')] },
  { method: 'get', path: '/v1/sessions/{id}/files/{path}', id: 'getFile', summary: "A workspace file's bytes, or a directory listing", auth: 'any', ok: [200, 'bytes'] },
  { method: 'delete', path: '/v1/sessions/{id}', id: 'deleteSession', summary: 'Remove the sandbox; the ledger stays', auth: 'any', ok: [204, null] },
  { method: 'get', path: '/v1/approvals', id: 'listApprovals', summary: 'Pending approvals', auth: 'operator', ok: [200, z.object({ approvals: z.array(Approval) })] },
  { method: 'get', path: '/v1/approvals/events', id: 'streamApprovals', capped: true, summary: 'SSE across all sessions: `snapshot` {approvals: cards} on every (re)connect, then `approval_requested` (a card: the approval with its command, edit diff, bash segments, grant scope in words, recent ledger) and `approval_resolved` {token, status, decision, decided_by, decided_at, reason}', auth: 'operator', ok: [200, 'sse'] },
  { method: 'get', path: '/v1/jobs/events', id: 'streamJobs', capped: true, summary: 'SSE of the jobs the key may see: `snapshot` {jobs} on every (re)connect, then `job` (the job view) whenever one changes', auth: 'any', ok: [200, 'sse'] },
  { method: 'get', path: '/v1/whoami', id: 'whoAmI', summary: "The key's display name and role (never the key)", auth: 'any', ok: [200, z.object({ name: z.string(), role: z.enum(['submitter', 'operator', 'admin']) })] },
  { method: 'get', path: '/dashboard', id: 'getDashboard', summary: 'The operator dashboard (a web page; it signs in with an API key itself)', auth: 'none', ok: [200, 'html'] },
  { method: 'post', path: '/v1/approvals/{token}', id: 'answerApproval', summary: 'Answer an approval', auth: 'operator', body: AnswerApprovalBody, ok: [200, z.unknown()] },
  { method: 'get', path: '/healthz', id: 'getHealth', summary: 'Liveness', auth: 'none', ok: [200, z.object({ status: z.literal('ok') })] },
  { method: 'get', path: '/readyz', id: 'getReadiness', summary: 'Readiness: Redis and Docker reachable (503 when not)', auth: 'none', ok: [200, z.object({ status: z.string(), redis: z.boolean(), docker: z.boolean() })] },
  { method: 'get', path: '/admin/queues', id: 'listQueues', summary: 'Sessions with work: queue counts and open commands', auth: 'operator', ok: [200, z.object({ queues: z.array(z.object({ session_id: z.string(), job_id: z.string().nullable(), open_commands: z.number() }).loose()) })] },
  { method: 'get', path: '/metrics', id: 'getMetrics', summary: 'Prometheus text format', auth: 'operator', ok: [200, 'text'] },
  { method: 'get', path: '/openapi.json', id: 'getOpenApi', summary: 'This document', auth: 'none', ok: [200, z.unknown()] },
];

function schema(s: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function okContent(kind: Route['ok'][1]): Record<string, unknown> | undefined {
  if (kind === null) return undefined;
  if (kind === 'text') return { 'text/plain': { schema: { type: 'string' } } };
  if (kind === 'html') return { 'text/html': { schema: { type: 'string' } } };
  if (kind === 'bytes') return { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } }, 'application/json': { schema: { type: 'object' } } };
  if (kind === 'sse') return { 'text/event-stream': { schema: { type: 'string' } } };
  if ('json' in kind) return { 'application/json': { schema: kind.json } };
  return { 'application/json': { schema: schema(kind, 'output') } };
}

let cached: Record<string, unknown> | null = null;

export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  const error = { description: 'error', content: { 'application/json': { schema: ref('Error') } } };
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const op: Record<string, unknown> = {
      operationId: r.id,
      summary: r.summary,
      ...(params.length ? { parameters: params } : {}),
      ...(r.auth === 'none' ? { security: [] } : {}),
      responses: {
        [String(r.ok[0])]: { description: r.summary, ...(okContent(r.ok[1]) ? { content: okContent(r.ok[1]) } : {}) },
        ...(r.auth !== 'none' ? { 401: error, 403: error } : {}),
        ...(r.body || r.bodyType ? { 400: error, 413: error } : {}),
        ...(r.path.includes('{') ? { 404: error } : {}),
        ...(r.capped ? { 429: error } : {}),
        // Even routes without a key, a body or an id answer client errors in the one shape (another method: 404).
        ...(r.auth === 'none' ? { '4XX': error } : {}),
      },
    };
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schema(r.body, 'input') } } };
    if (r.bodyType) op.requestBody = { required: true, content: { [r.bodyType]: { schema: { type: 'string' } } } };
    (paths[r.path] ??= {})[r.method] = op;
  }
  cached = {
    openapi: '3.1.0',
    info: { title: 'ThinkFlow Sandbox API', version: '0.1.0', description: 'Runs AI-agent work unattended and safely.' },
    servers: [{ url: 'http://127.0.0.1:8080', description: 'the default listen address (PORT, HOST); use the address your deployment serves' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, s]) => [name, schema(s, 'output')])),
    },
    security: [{ bearer: [] }],
    paths,
  };
  return cached;
}
