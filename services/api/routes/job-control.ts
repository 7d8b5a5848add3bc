import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { z } from 'zod';
import { FINAL_JOB_STATUSES, MAX_MESSAGE_CHARS, MAX_PENDING_MESSAGES, type JobsService, type JobView } from '../../jobs/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';
import { maxBody } from '../middleware/limits.ts';
import { json, JobViewRef, route } from '../openapi.ts';
import { jsonBody } from '../validate.ts';
import { visibleJob } from './jobs.ts';

// Steering and pause/resume of a running job (API.md additions). The process
// running the job may be another one: these routes only write the request to
// Redis (jobs/job-control.ts); the runner applies it within its poll.

export type JobControlRoutesDeps = { jobs: JobsService; maxJsonBytes: number };

export const MessageBody = z.strictObject({
  text: z.string().min(1, 'text must not be empty').max(MAX_MESSAGE_CHARS, `text is longer than ${MAX_MESSAGE_CHARS} characters`),
  interrupt: z.boolean().default(false),
});

const FINISHED = '409: the job has finished (`job_finished`)';

const routes = (d: JobControlRoutesDeps) => ({
  message: route({
    method: 'post', path: '/{job_id}/messages', id: 'steerJob', auth: 'writer', writes: true,
    summary: 'Steer a running job: the text joins the next model call; `interrupt: true` stops the current stream first',
    middleware: [maxBody(d.maxJsonBytes), jsonBody()],
    request: { body: { required: true, content: { 'application/json': { schema: MessageBody } } } },
    errors: { 409: FINISHED, 429: `the job already holds ${MAX_PENDING_MESSAGES} messages no model call has taken (\`too_many\`)` },
    ok: { 202: json(z.object({ message_id: z.string(), job_id: z.string(), interrupt: z.boolean() }), 'the message waits for the next model call') },
  }),
  pause: route({
    method: 'post', path: '/{job_id}/pause', id: 'pauseJob', auth: 'writer', writes: true,
    summary: 'Pause: no new model call or command starts (the running one finishes)',
    errors: { 409: FINISHED }, ok: { 202: json(JobViewRef, 'the job, paused (or pausing)') },
  }),
  resume: route({
    method: 'post', path: '/{job_id}/resume', id: 'resumeJob', auth: 'writer', writes: true, summary: 'Resume a paused job',
    errors: { 409: `${FINISHED}, or it is not paused (\`job_not_paused\`)` }, ok: { 202: json(JobViewRef, 'the job, running again (or resuming)') },
  }),
});

export function jobControlRoutes(d: JobControlRoutesDeps): OpenAPIHono<AppEnv> {
  const { jobs } = d;
  const r = routes(d);
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(r.message, async (c) => {
    const job = unfinished(await visibleJob(c, jobs), 'steered');
    const { text, interrupt } = c.req.valid('json');
    const added = await jobs.message(job, text, interrupt);
    if (!added) {
      throw new AppError(429, 'too_many', `job ${job.job_id} already holds ${MAX_PENDING_MESSAGES} messages its next model call has not taken`, {
        details: { cap: MAX_PENDING_MESSAGES },
      });
    }
    return c.json({ message_id: added.id, job_id: job.job_id, interrupt }, 202);
  });

  app.openapi(r.pause, async (c) => {
    const job = unfinished(await visibleJob(c, jobs), 'paused');
    if (job.status !== 'paused') await jobs.pause(job);
    return c.json(await settledView(c, jobs, job.job_id, (s) => s === 'paused'), 202);
  });

  app.openapi(r.resume, async (c) => {
    const job = unfinished(await visibleJob(c, jobs), 'resumed');
    if (job.status !== 'paused' && !(await jobs.control.pauseRequested(job.job_id))) {
      throw new AppError(409, 'job_not_paused', `job ${job.job_id} is ${job.status}, not paused`, { details: { status: job.status } });
    }
    await jobs.resume(job);
    return c.json(await settledView(c, jobs, job.job_id, (s) => s !== 'paused'), 202);
  });

  return app;
}

function unfinished(stored: { view: JobView }, what: string): JobView {
  const job = stored.view;
  if (FINAL_JOB_STATUSES.has(job.status)) {
    throw new AppError(409, 'job_finished', `job ${job.job_id} has finished (${job.status}): it cannot be ${what}`, { details: { status: job.status } });
  }
  return job;
}

/** How long an answer waits for the runner to apply a pause or resume (it polls every 500 ms). */
const SETTLE_MS = 2000;

/** The job once its runner applied the change (or finished), else as it stands after SETTLE_MS. */
async function settledView(c: Context<AppEnv>, jobs: JobsService, id: string, applied: (s: JobView['status']) => boolean): Promise<JobView> {
  const until = Date.now() + SETTLE_MS;
  for (;;) {
    const view = (await jobs.store.get(id))?.view;
    if (!view) throw new AppError(404, 'not_found', `job ${id} not found`);
    if (applied(view.status) || FINAL_JOB_STATUSES.has(view.status) || Date.now() >= until || c.req.raw.signal.aborted) return view;
    await new Promise((r) => setTimeout(r, 100));
  }
}
