import { z } from 'zod';
import { CommandCounts, JobRequest, JobView, SubmitResponse } from '../jobs/job-schemas.ts';
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

type Route = {
  method: 'get' | 'post' | 'delete';
  path: string;
  summary: string;
  auth: 'none' | 'any' | 'operator';
  body?: z.ZodType;
  bodyType?: string;
  ok: [number, z.ZodType | 'text' | 'html' | 'bytes' | 'sse' | null];
};

const ROUTES: Route[] = [
  { method: 'post', path: '/v1/jobs', summary: 'Submit an unattended job', auth: 'any', body: JobRequest, ok: [202, SubmitResponse] },
  { method: 'get', path: '/v1/jobs', summary: 'Jobs, newest first (a submitter sees its own); ?limit=&status=', auth: 'any', ok: [200, z.object({ jobs: z.array(JobView) })] },
  { method: 'get', path: '/v1/jobs/{job_id}', summary: 'A job: status and figures', auth: 'any', ok: [200, JobView] },
  { method: 'get', path: '/v1/jobs/{job_id}/events', summary: 'Server-Sent Events, resumable with Last-Event-ID', auth: 'any', ok: [200, 'sse'] },
  { method: 'post', path: '/v1/jobs/{job_id}/cancel', summary: 'Stop the model, skip the queue', auth: 'any', ok: [202, JobView] },
  {
    method: 'get', path: '/v1/jobs/{job_id}/webhook-deliveries', summary: 'Every webhook delivery attempt of the job', auth: 'any',
    ok: [200, z.object({ deliveries: z.array(z.object({ attempt: z.number(), at: z.string(), status_code: z.number().optional(), error: z.string().optional(), ok: z.boolean() })) })],
  },
  { method: 'post', path: '/v1/sessions', summary: 'A session without a model', auth: 'any', body: CreateSessionBody, ok: [201, z.object({ session_id: z.string() })] },
  { method: 'get', path: '/v1/sessions/{id}', summary: 'A session: project, approval mode, job, timestamps', auth: 'any', ok: [200, z.object({ session_id: z.string() }).loose()] },
  { method: 'get', path: '/v1/sessions/{id}/events', summary: "The session's events as SSE, resumable with Last-Event-ID", auth: 'any', ok: [200, 'sse'] },
  { method: 'post', path: '/v1/sessions/{id}/commands', summary: 'Run tf-* tags as one turn', auth: 'any', bodyType: 'text/plain', ok: [200, z.object({ results: z.array(CommandResult), errors: z.array(ParseError) })] },
  { method: 'get', path: '/v1/sessions/{id}/ledger', summary: 'The session ledger, in execution order', auth: 'any', ok: [200, z.object({ entries: z.array(LedgerRecord) })] },
  { method: 'get', path: '/v1/sessions/{id}/files/{path}', summary: "A workspace file's bytes, or a directory listing", auth: 'any', ok: [200, 'bytes'] },
  { method: 'delete', path: '/v1/sessions/{id}', summary: 'Remove the sandbox; the ledger stays', auth: 'any', ok: [204, null] },
  { method: 'get', path: '/v1/approvals', summary: 'Pending approvals', auth: 'operator', ok: [200, z.object({ approvals: z.array(Approval) })] },
  { method: 'get', path: '/v1/approvals/events', summary: 'SSE across all sessions: `snapshot` {approvals: cards} on every (re)connect, then `approval_requested` (a card: the approval with its command, edit diff, bash segments, grant scope in words, recent ledger) and `approval_resolved` {token, status, decision, decided_by, decided_at, reason}', auth: 'operator', ok: [200, 'sse'] },
  { method: 'get', path: '/v1/jobs/events', summary: 'SSE of the jobs the key may see: `snapshot` {jobs} on every (re)connect, then `job` (the job view) whenever one changes', auth: 'any', ok: [200, 'sse'] },
  { method: 'get', path: '/v1/whoami', summary: "The key's display name and role (never the key)", auth: 'any', ok: [200, z.object({ name: z.string(), role: z.enum(['submitter', 'operator', 'admin']) })] },
  { method: 'get', path: '/dashboard', summary: 'The operator dashboard (a web page; it signs in with an API key itself)', auth: 'none', ok: [200, 'html'] },
  { method: 'post', path: '/v1/approvals/{token}', summary: 'Answer an approval', auth: 'operator', body: AnswerApprovalBody, ok: [200, z.unknown()] },
  { method: 'get', path: '/healthz', summary: 'Liveness', auth: 'none', ok: [200, z.object({ status: z.literal('ok') })] },
  { method: 'get', path: '/readyz', summary: 'Readiness: Redis and Docker reachable (503 when not)', auth: 'none', ok: [200, z.object({ status: z.string(), redis: z.boolean(), docker: z.boolean() })] },
  { method: 'get', path: '/admin/queues', summary: 'Sessions with work: queue counts and open commands', auth: 'operator', ok: [200, z.object({ queues: z.array(z.object({ session_id: z.string(), job_id: z.string().nullable(), open_commands: z.number() }).loose()) })] },
  { method: 'get', path: '/metrics', summary: 'Prometheus text format', auth: 'operator', ok: [200, 'text'] },
  { method: 'get', path: '/openapi.json', summary: 'This document', auth: 'none', ok: [200, z.unknown()] },
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
  return { 'application/json': { schema: schema(kind, 'output') } };
}

let cached: Record<string, unknown> | null = null;

export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  const error = { description: 'error', content: { 'application/json': { schema: schema(ErrorBody, 'output') } } };
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const op: Record<string, unknown> = {
      summary: r.summary,
      ...(params.length ? { parameters: params } : {}),
      ...(r.auth === 'none' ? { security: [] } : {}),
      responses: {
        [String(r.ok[0])]: { description: r.summary, ...(okContent(r.ok[1]) ? { content: okContent(r.ok[1]) } : {}) },
        ...(r.auth !== 'none' ? { 401: error, 403: error } : {}),
        ...(r.body || r.bodyType ? { 400: error, 413: error } : {}),
        ...(r.path.includes('{') ? { 404: error } : {}),
      },
    };
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schema(r.body, 'input') } } };
    if (r.bodyType) op.requestBody = { required: true, content: { [r.bodyType]: { schema: { type: 'string' } } } };
    (paths[r.path] ??= {})[r.method] = op;
  }
  cached = {
    openapi: '3.1.0',
    info: { title: 'ThinkFlow Sandbox API', version: '0.1.0', description: 'Runs AI-agent work unattended and safely.' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { CommandCounts: schema(CommandCounts, 'output'), LedgerRecord: schema(LedgerRecord, 'output') },
    },
    security: [{ bearer: [] }],
    paths,
  };
  return cached;
}
