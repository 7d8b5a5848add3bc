import { Hono } from 'hono';
import type { Runtime } from './runtime-deps.ts';
import type { AppEnv } from './env.ts';
import { AppError, toAppError } from './errors.ts';
import { auth, requireRole } from './middleware/auth.ts';
import { httpMetrics } from './middleware/http-metrics.ts';
import { approvalRoutes } from './routes/approvals.ts';
import { guardRawFilePaths } from './routes/raw-path.ts';
import { sessionEventRoutes } from './routes/session-events.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { systemRoutes } from './routes/system.ts';
import { jobRoutes } from './routes/jobs.ts';
import { adminRoutes } from './routes/admin.ts';
import { openApiDocument } from './openapi.ts';
import { StreamCaps } from './stream-caps.ts';
import type { JobsService } from '../jobs/jobs-service.ts';
import { dashboardRoutes } from '../dashboard/routes.ts';
import { Firehose } from '../pipeline/firehose.ts';
import { approvalEventRoutes, jobEventRoutes } from './routes/live-routes.ts';

/**
 * The REST API of API.md over one runtime. Routes read like a table; every
 * error leaves through `onError` in the one shape.
 * @example serve({ fetch: createApp(runtime).fetch, port: 8080 })
 */
export function createApp(rt: Runtime, extras: { jobs?: JobsService } = {}): Hono<AppEnv> {
  const { maxJsonBytes, maxCommandsBytes, apiKeys, apiKeyNames } = rt.config;
  const firehose = new Firehose(rt.subscriber, rt.keys);
  const streams = new StreamCaps(rt.config.caps.maxStreamsPerKey);
  const live = { pipeline: rt.pipeline, gate: rt.gate, firehose, streams };
  const app = new Hono<AppEnv>();

  app.use('*', httpMetrics({ counter: rt.metrics.httpRequests }));
  app.use('*', auth({ keys: apiKeys, names: apiKeyNames, publicPrefixes: ['/dashboard'] }));
  app.use('*', guardRawFilePaths());

  app.get('/openapi.json', (c) => c.json(openApiDocument()));
  app.route('/dashboard', dashboardRoutes());
  app.route('/', systemRoutes(rt));
  app.route('/admin', adminRoutes(rt));
  if (extras.jobs) app.route('/v1/jobs', jobEventRoutes({ ...live, jobs: extras.jobs }));
  if (extras.jobs) app.route('/v1/jobs', jobRoutes({ jobs: extras.jobs, pipeline: rt.pipeline, redis: rt.redis, keys: rt.keys, streams, maxJsonBytes }));
  app.route('/v1/sessions', sessionRoutes({ pipeline: rt.pipeline, maxJsonBytes, maxCommandsBytes }));
  app.route('/v1/sessions', sessionEventRoutes({ ...rt, streams }));
  app.use('/v1/approvals', requireRole('operator', 'admin'));
  app.use('/v1/approvals/*', requireRole('operator', 'admin'));
  app.route('/v1/approvals', approvalEventRoutes(live));
  app.route('/v1/approvals', approvalRoutes({ pipeline: rt.pipeline, maxJsonBytes }));

  app.notFound((c) => c.json(new AppError(404, 'not_found', 'no such route').toBody(), 404));
  app.onError((err, c) => {
    const known = toAppError(err);
    // After a 413 the unread body makes the connection unusable: tell the client not to reuse it.
    if (known) return c.json(known.toBody(), known.status, known.status === 413 ? { connection: 'close' } : {});
    process.stderr.write(`thinkflow api: ${c.req.method} ${c.req.path}: ${(err as Error).stack ?? String(err)}\n`);
    return c.json({ error: { code: 'internal', message: 'internal error', details: null } }, 500);
  });
  return app;
}
