import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { FINAL_JOB_STATUSES, JobRequest, SubmitResponse, WebhookDelivery, WebhookRefusedError, type JobsService, type StoredJob } from '../../jobs/index.ts';
import type { IdempotencyStore, Keys, Pipeline } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { idempotent } from '../middleware/idempotency.ts';
import { maxBody } from '../middleware/limits.ts';
import { json, JobViewRef, route, sse } from '../openapi.ts';
import { LimitQuery } from '../schemas.ts';
import { resumePoint, streamSessionEvents } from '../sse.ts';
import type { StreamCaps } from '../stream-caps.ts';
import { checkFilePaths, jsonBody, limitOf } from '../validate.ts';

// Jobs (API.md): submit, list, read, cancel, webhook deliveries, and the
// job's events as Server-Sent Events, resumable with Last-Event-ID and
// closed after job_finished.

export type JobRoutesDeps = { jobs: JobsService; pipeline: Pipeline; redis: Redis; keys: Keys; streams: StreamCaps; maxJsonBytes: number; idempotency: IdempotencyStore };

/** A job the caller may see: a submitter sees only its own (404 for others'). */
export async function visibleJob(c: Context<AppEnv>, jobs: JobsService): Promise<StoredJob> {
  const id = c.req.param('job_id') ?? '';
  const job = await jobs.store.get(id);
  const me = c.var.principal;
  if (!job || (me.role === 'submitter' && job.owner !== me.id)) throw new AppError(404, 'not_found', `job ${id} not found`);
  return job;
}

const LIST_MAX = 500;

const routes = (d: JobRoutesDeps) => ({
  submit: route({
    method: 'post', path: '/', id: 'submitJob', summary: 'Submit an unattended job', auth: 'writer', capped: true, writes: true,
    errors: {
      404: '`session_id` names no session of this key (`session_not_found`)',
      409: 'a job or an upload runs on that session (`session_busy`)',
      410: 'that session was deleted (`session_deleted`)',
    },
    middleware: [maxBody(d.maxJsonBytes), jsonBody()], idempotent: idempotent(d.idempotency, { body: 'json' }),
    request: { body: { required: true, content: { 'application/json': { schema: JobRequest } } } },
    ok: { 202: json(SubmitResponse, 'accepted: the job is queued') },
  }),
  list: route({
    method: 'get', path: '/', id: 'listJobs', summary: 'Jobs, newest first (a submitter sees its own); ?limit=&status=', auth: 'any',
    request: { query: LimitQuery(LIST_MAX, 50).extend({ status: z.string().optional().meta({ description: 'only jobs in this status' }) }) },
    ok: { 200: json(z.object({ jobs: z.array(JobViewRef) }), 'the jobs') },
  }),
  get: route({
    method: 'get', path: '/{job_id}', id: 'getJob', summary: 'A job: status and figures', auth: 'any',
    ok: { 200: json(JobViewRef, 'the job') },
  }),
  events: route({
    method: 'get', path: '/{job_id}/events', id: 'streamJobEvents', summary: 'Server-Sent Events, resumable with Last-Event-ID', auth: 'any', capped: true,
    ok: { 200: sse("the job's events (API.md §Events), `id:` = seq, ending after job_finished; `gap {first_seq}` before trimmed events") },
  }),
  cancel: route({
    // Operators too (issue 24: the dashboard's job page); a submitter only its own jobs (visibleJob).
    method: 'post', path: '/{job_id}/cancel', id: 'cancelJob', summary: 'Stop the model, skip the queue (the job\'s submitter, operators, admins)', auth: 'any', writes: true,
    ok: { 202: json(JobViewRef, 'the job, cancelling (or already final)') },
  }),
  deliveries: route({
    method: 'get', path: '/{job_id}/webhook-deliveries', id: 'listWebhookDeliveries', summary: 'Every webhook delivery attempt of the job', auth: 'any',
    ok: { 200: json(z.object({ deliveries: z.array(WebhookDelivery) }), 'the attempts, oldest first') },
  }),
});

export function jobRoutes(d: JobRoutesDeps): OpenAPIHono<AppEnv> {
  const { jobs } = d;
  const r = routes(d);
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(r.submit, async (c) => {
    const body = c.req.valid('json');
    checkFilePaths(body.files);
    let view;
    try {
      view = await jobs.submit(body, c.var.principal.id, { tightenOnly: c.var.principal.role === 'submitter' });
    } catch (err) {
      if (err instanceof WebhookRefusedError) throw new AppError(400, 'webhook_refused', err.message, { details: { webhook: body.webhook } });
      throw err;
    }
    return c.json({ job_id: view.job_id, session_id: view.session_id, status: view.status }, 202);
  });

  app.openapi(r.list, (c) => listJobs(c, jobs));

  app.openapi(r.get, async (c) => c.json((await visibleJob(c, jobs)).view, 200));

  app.openapi(r.deliveries, async (c) => {
    const job = await visibleJob(c, jobs);
    return c.json({ deliveries: await jobs.store.deliveries(job.view.job_id) }, 200);
  });

  app.openapi(r.cancel, async (c) => {
    const job = await visibleJob(c, jobs);
    if (FINAL_JOB_STATUSES.has(job.view.status)) return c.json(job.view, 202);
    await jobs.cancel(job.view.job_id);
    return c.json((await jobs.store.get(job.view.job_id))!.view, 202);
  });

  app.openapi(r.events, (c) => jobEvents(c, d));

  return app;
}

/** Newest first, `?limit=` of them; a submitter sees its own jobs only. */
async function listJobs(c: Context<AppEnv>, jobs: JobsService): Promise<Response> {
  const limit = limitOf(c, LIST_MAX, 50);
  const status = c.req.query('status');
  const me = c.var.principal;
  const out = [];
  for (const id of await jobs.store.list(me.role === 'submitter' ? 5000 : limit * 4)) {
    const job = await jobs.store.get(id);
    if (!job || (me.role === 'submitter' && job.owner !== me.id) || (status && job.view.status !== status)) continue;
    out.push(job.view);
    if (out.length === limit) break;
  }
  return c.json({ jobs: out }, 200);
}

/** The session's events with the job's id on each, closed after job_finished. */
async function jobEvents(c: Context<AppEnv>, d: JobRoutesDeps): Promise<Response> {
  const job = await visibleJob(c, d.jobs);
  const jobId = job.view.job_id;
  return streamSessionEvents(c, d, job.view.session_id, {
    // A job on an existing session starts after the session's earlier events (another job's job_finished among them).
    after: Math.max(resumePoint(c), job.fromSeq),
    data: ({ seq, type: _type, ...rest }) => ({ seq, ...rest, job_id: jobId }),
    endsWith: 'job_finished',
    gapData: { job_id: jobId },
    done: async () => FINAL_JOB_STATUSES.has((await d.jobs.store.get(jobId))?.view.status ?? 'failed'),
  });
}
