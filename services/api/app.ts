import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ApiKeys } from '../config/index.ts';
import { dashboardRoutes, type ToolCatalog } from '../dashboard/index.ts';
import { TOOL_NAMES, TOOLS } from '../protocol/index.ts';
import type { JobsService } from '../jobs/index.ts';
import { withIds } from '../log/index.ts';
import type { Firehose, IdempotencyStore, Keys, Pipeline, PolicyGate } from '../pipeline/index.ts';
import type { AppEnv } from './env.ts';
import { AppError, toAppError } from './errors.ts';
import { auth, requireRole } from './middleware/auth.ts';
import { originGuard } from './middleware/origin.ts';
import { redisGuard, type RedisWatch } from './middleware/redis-guard.ts';
import { httpMetrics, type RequestCounter } from './middleware/http-metrics.ts';
import { documentOf, json, route } from './openapi.ts';
import { adminRoutes } from './routes/admin.ts';
import { approvalRoutes } from './routes/approvals.ts';
import { approvalPreviewRoutes } from './routes/approval-preview.ts';
import { jobFacts } from './approval-context.ts';
import { CardViews } from './card/card-views.ts';
import type { ViewPool } from './card/view-pool.ts';
import { approvalEventRoutes, jobEventRoutes } from './routes/live-routes.ts';
import { guardRawFilePaths } from './routes/raw-path.ts';
import { sessionEventRoutes } from './routes/session-events.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { workspaceUploadRoutes } from './routes/workspace-upload.ts';
import { workspaceOutRoutes } from './routes/workspace-out.ts';
import { systemRoutes } from './routes/system.ts';
import { jobControlRoutes } from './routes/job-control.ts';
import { jobRoutes } from './routes/jobs.ts';
import { StreamCaps, TurnCaps } from './stream-caps.ts';
import { validationHook } from './validate.ts';

/** What the API uses, and nothing more. Building the app touches none of it: that happens per request. */
export type AppDeps = {
  /** key → role; null is dev mode (every loopback caller is admin) */
  apiKeys: ApiKeys | null;
  /** dev mode's extra Host names and the origins allowed cross-origin; @default none */
  web?: { allowedHosts: string[]; corsOrigins: string[] };
  apiKeyNames: Map<string, string>;
  /** maxTurnsPerKey omitted = no cap */
  /** maxUploadBytes omitted = 256 MiB (THINKFLOW_MAX_UPLOAD_MB's default) */
  limits: { maxJsonBytes: number; maxCommandsBytes: number; maxUploadBytes?: number; maxStreamsPerKey: number; maxTurnsPerKey?: number };
  pipeline: Pipeline;
  gate: PolicyGate;
  /** every session's events and approval answers, for the cross-session streams */
  firehose: Firehose;
  redis: Redis;
  keys: Keys;
  metrics: { httpRequests: RequestCounter; approvalViews?: { inc(labels: { result: string }): void }; render(): Promise<string>; readonly contentType: string };
  /** worker threads for the approval cards' large records and diffs (bounded by its limits) */
  viewPool: ViewPool;
  /** the `Idempotency-Key`s of POST /v1/jobs, /v1/sessions and /commands, in Redis (shared by every API process) */
  idempotency: IdempotencyStore;
  /** the jobs routes exist only with a jobs service */
  jobs?: JobsService;
  /** Redis reachability known within about a second (the pipeline's RedisProbe): 503 `redis_unavailable` instead of waiting; omitted = a PING per /readyz and no guard */
  redisWatch?: RedisWatch & { check(): Promise<RedisWatch['state']> };
  /** /readyz counts Docker only where commands run (a worker); an API-only process reports it but does not need it. @default true */
  needsDocker?: boolean;
};

const openApiRoute = route({
  method: 'get', path: '/openapi.json', id: 'getOpenApi', summary: 'This document', auth: 'none',
  ok: { 200: json(z.record(z.string(), z.unknown()), 'the OpenAPI 3.1 document of every route') },
});

/**
 * The REST API of API.md. Routes read like a table, each with its schemas
 * and documentation; every error leaves through `onError` in the one shape.
 * @example serve({ fetch: createApp(deps).fetch, port: 8080 })
 */
export function createApp(d: AppDeps): OpenAPIHono<AppEnv> {
  const { pipeline, gate, firehose, redis, keys, jobs, idempotency } = d;
  const { maxJsonBytes, maxCommandsBytes } = d.limits;
  const streams = new StreamCaps(d.limits.maxStreamsPerKey);
  const turns = new TurnCaps(d.limits.maxTurnsPerKey ?? Infinity);
  const watch = d.redisWatch;
  const ping = {
    redis: async () => (watch ? watch.check() : { up: (await redis.ping()) === 'PONG', reason: null }),
    docker: () => pipeline.sandboxes.ping(),
  };
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.use('*', httpMetrics({ counter: d.metrics.httpRequests }));
  app.use('*', originGuard({ devMode: d.apiKeys === null, allowedHosts: d.web?.allowedHosts ?? [], corsOrigins: d.web?.corsOrigins ?? [] }));
  app.use('*', auth({ keys: d.apiKeys, names: d.apiKeyNames, publicPrefixes: ['/dashboard'] }));
  if (watch) app.use('*', redisGuard({ redis: watch }));
  app.use('*', guardRawFilePaths());

  app.route('/dashboard', dashboardRoutes(toolCatalog()));
  app.route('/', systemRoutes({ ping, needsDocker: d.needsDocker ?? true, metrics: d.metrics }));
  app.route('/admin', adminRoutes({ pipeline }));
  if (jobs) app.route('/v1/jobs', jobEventRoutes({ firehose, streams, jobs }));
  if (jobs) app.route('/v1/jobs', jobRoutes({ jobs, pipeline, redis, keys, streams, maxJsonBytes, idempotency }));
  if (jobs) app.route('/v1/jobs', jobControlRoutes({ jobs, maxJsonBytes }));
  app.route('/v1/sessions', sessionRoutes({ pipeline, maxJsonBytes, maxCommandsBytes, turns, idempotency }));
  app.route('/v1/sessions', sessionEventRoutes({ pipeline, redis, keys, streams }));
  app.route('/v1/sessions', workspaceUploadRoutes({ pipeline, maxUploadBytes: d.limits.maxUploadBytes ?? 256 * 1024 * 1024 }));
  app.route('/v1/sessions', workspaceOutRoutes({ pipeline }));
  // Every approvals path, routed or not, is for operators.
  app.use('/v1/approvals', requireRole('operator', 'admin'));
  app.use('/v1/approvals/*', requireRole('operator', 'admin'));
  const views = new CardViews({ pipeline, gate, pool: d.viewPool, computed: d.metrics.approvalViews });
  const facts = jobFacts(jobs);
  app.route('/v1/approvals', approvalEventRoutes({ pipeline, views, firehose, streams, jobFacts: facts }));
  app.route('/v1/approvals', approvalRoutes({ pipeline, maxJsonBytes, jobFacts: facts }));
  app.route('/v1/approvals', approvalPreviewRoutes({ pipeline, redis, keys }));
  const document = documentOf(app);
  app.openapi(openApiRoute, (c) => c.json(document(), 200));

  app.notFound((c) => c.json(new AppError(404, 'not_found', 'no such route').toBody(), 404));
  app.onError((err, c) => {
    const known = toAppError(err);
    if (known?.code === 'storage_full') withIds(idsOf(c)).error({ err, method: c.req.method, path: c.req.path }, 'api: Redis is full (maxmemory), write refused');
    // After a 413 the unread body makes the connection unusable: tell the client not to reuse it.
    if (known) return c.json(known.toBody(), known.status, known.status === 413 ? { connection: 'close' } : {});
    withIds(idsOf(c)).error({ err, method: c.req.method, path: c.req.path }, 'api: request failed');
    return c.json({ error: { code: 'internal', message: 'internal error', details: null } }, 500);
  });
  return app;
}

/** The session or job a failed request was about, for its log line. */
function idsOf(c: Context): { session_id?: string; job_id?: string } {
  const m = /^\/v1\/(sessions|jobs)\/([^/]+)/.exec(c.req.path);
  if (!m || m[2] === 'events') return {};
  return m[1] === 'sessions' ? { session_id: m[2] } : { job_id: m[2] };
}

/** The dashboard's view of the tool descriptors: data only, for its generated `tools.js`. */
function toolCatalog(): ToolCatalog {
  return Object.fromEntries(TOOL_NAMES.map((name) => {
    const d = TOOLS[name];
    const paths = d.attributes.filter((a) => a.kind === 'path').map((a) => ({ name: a.name, access: a.access }));
    return [name, { verb: d.verb, judged: d.judged, body: d.body, paths }];
  }));
}
