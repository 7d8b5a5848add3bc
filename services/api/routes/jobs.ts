import { Hono, type Context } from 'hono';
import { normalizeWorkspacePath } from '../../policy/index.ts';
import { resumePoint, streamSessionEvents } from '../sse.ts';
import type { StreamCaps } from '../stream-caps.ts';
import type { Pipeline } from '../../pipeline/pipeline.ts';
import type { Keys } from '../../pipeline/keys.ts';
import type { Redis } from 'ioredis';
import { WebhookRefusedError, type JobsService } from '../../jobs/jobs-service.ts';
import { FINAL_JOB_STATUSES, JobRequest } from '../../jobs/job-schemas.ts';
import type { StoredJob } from '../../jobs/job-store.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { requireRole } from '../middleware/auth.ts';
import { maxBody } from '../middleware/limits.ts';
import { readJson } from '../validate.ts';

// Jobs (API.md): submit, read, cancel, and the job's events as Server-Sent
// Events, resumable with Last-Event-ID and closed after job_finished.

export type JobRoutesDeps = { jobs: JobsService; pipeline: Pipeline; redis: Redis; keys: Keys; streams: StreamCaps; maxJsonBytes: number };

/** A job the caller may see: a submitter sees only its own (404 for others'). */
async function visibleJob(c: Context<AppEnv>, jobs: JobsService): Promise<StoredJob> {
  const id = c.req.param('job_id') ?? '';
  const job = await jobs.store.get(id);
  const me = c.var.principal;
  if (!job || (me.role === 'submitter' && job.owner !== me.id)) throw new AppError(404, 'not_found', `job ${id} not found`);
  return job;
}

export function jobRoutes({ jobs, pipeline, redis, keys, streams, maxJsonBytes }: JobRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/', requireRole('submitter', 'admin'), maxBody(maxJsonBytes), async (c) => {
    const body = await readJson(c, JobRequest);
    const bad = Object.keys(body.files ?? {}).map((path) => ({ path, n: normalizeWorkspacePath(path) })).filter((f) => !f.n.ok);
    if (bad.length) {
      throw new AppError(400, 'invalid_files', 'file paths must stay inside the workspace', {
        details: bad.map((b) => ({ path: b.path, reason: b.n.ok ? '' : b.n.reason })),
      });
    }
    let view;
    try {
      view = await jobs.submit(body, c.var.principal.id, { tightenOnly: c.var.principal.role === 'submitter' });
    } catch (err) {
      if (err instanceof WebhookRefusedError) throw new AppError(400, 'webhook_refused', err.message, { details: { webhook: body.webhook } });
      throw err;
    }
    return c.json({ job_id: view.job_id, session_id: view.session_id, status: view.status }, 202);
  });

  // Newest first; a submitter sees its own jobs only.
  app.get('/', async (c) => {
    const raw = c.req.query('limit') ?? '50';
    const limit = Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new AppError(400, 'invalid_query', `limit must be a whole number from 1 to 500, got '${raw}'`);
    const status = c.req.query('status');
    const me = c.var.principal;
    const out = [];
    for (const id of await jobs.store.list(me.role === 'submitter' ? 5000 : limit * 4)) {
      const job = await jobs.store.get(id);
      if (!job || (me.role === 'submitter' && job.owner !== me.id) || (status && job.view.status !== status)) continue;
      out.push(job.view);
      if (out.length === limit) break;
    }
    return c.json({ jobs: out });
  });

  app.get('/:job_id', async (c) => c.json((await visibleJob(c, jobs)).view));

  app.get('/:job_id/webhook-deliveries', async (c) => {
    const job = await visibleJob(c, jobs);
    return c.json({ deliveries: await jobs.store.deliveries(job.view.job_id) });
  });

  app.post('/:job_id/cancel', requireRole('submitter', 'admin'), async (c) => {
    const job = await visibleJob(c, jobs);
    if (job.view.status === 'succeeded' || job.view.status === 'failed' || job.view.status === 'cancelled') {
      return c.json(job.view, 202);
    }
    await jobs.cancel(job.view.job_id);
    return c.json((await jobs.store.get(job.view.job_id))!.view, 202);
  });

  app.get('/:job_id/events', async (c) => {
    const job = await visibleJob(c, jobs);
    const jobId = job.view.job_id;
    return streamSessionEvents(c, { pipeline, redis, keys, streams }, job.view.session_id, {
      after: resumePoint(c),
      data: ({ seq, type: _type, ...rest }) => ({ seq, ...rest, job_id: jobId }),
      endsWith: 'job_finished',
      gapData: { job_id: jobId },
      done: async () => FINAL_JOB_STATUSES.has((await jobs.store.get(jobId))?.view.status ?? 'failed'),
    });
  });

  return app;
}
