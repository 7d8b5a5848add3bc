import { Hono } from 'hono';
import type { JobsService } from '../../jobs/jobs-service.ts';
import type { Pipeline } from '../../pipeline/pipeline.ts';
import type { PolicyGate } from '../../pipeline/policy-gate.ts';
import { approvalCard } from '../approval-view.ts';
import type { AppEnv } from '../env.ts';
import type { Firehose } from '../../pipeline/firehose.ts';
import { streamFeed, throttleByKey } from '../live-feed.ts';
import { requireRole } from '../middleware/auth.ts';
import type { StreamCaps } from '../stream-caps.ts';

// Live streams across sessions, for the dashboard and any operator tool:
// `GET /v1/approvals/events` (operators: pending approvals as cards, and each
// answer or expiry as it happens) and `GET /v1/jobs/events` (the jobs the
// caller may see, each time one changes).

export type LiveDeps = { pipeline: Pipeline; gate: PolicyGate; firehose: Firehose; streams: StreamCaps; jobs?: JobsService };

const LIST_LIMIT = 100;

export function approvalEventRoutes(d: LiveDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const a = d.pipeline.approvals;
  app.get('/events', requireRole('operator', 'admin'), (c) => streamFeed(c, {
    label: 'approvals stream',
    streams: d.streams,
    listen: (push) => d.firehose.listen({
      event: (e) => {
        if (e.type !== 'approval_requested' || !e.approval) return;
        void a.get(e.approval.token)
          .then(async (s) => { if (s?.status === 'pending') push('approval_requested', await approvalCard(d, s)); })
          .catch((err) => process.stderr.write(`thinkflow api: approvals stream: card ${e.session_id}: ${(err as Error).message}\n`));
      },
      answered: (token) => {
        void a.get(token).then((s) => {
          if (!s || s.status === 'pending') return;
          const { token: t, session_id, job_id, command_id, status, decision, decided_by, decided_at, reason } = s;
          push('approval_resolved', { token: t, session_id, job_id, command_id, status, decision, decided_by, decided_at, reason });
        }).catch((err) => process.stderr.write(`thinkflow api: approvals stream: answer: ${(err as Error).message}\n`));
      },
    }),
    snapshot: async () => ({ approvals: await Promise.all((await a.listPending()).map((s) => approvalCard(d, s))) }),
  }));
  return app;
}

export function jobEventRoutes(d: LiveDeps & { jobs: JobsService }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/events', (c) => {
    const me = c.var.principal;
    const visible = async (id: string) => {
      const job = await d.jobs.store.get(id);
      return job && (me.role !== 'submitter' || job.owner === me.id) ? job.view : null;
    };
    return streamFeed(c, {
      label: 'jobs stream',
      streams: d.streams,
      listen: async (push) => {
        // A busy job's view is written often: send it at most 4 times a second.
        const send = throttleByKey(250, (id) => {
          void visible(id).then((v) => v && push('job', v))
            .catch((err) => process.stderr.write(`thinkflow api: jobs stream: ${id}: ${(err as Error).message}\n`));
        });
        // Every write of a job's view is announced: the list follows the view, nothing else.
        const stop = await d.firehose.onChannel(d.jobs.store.changesChannel(), (id) => send.call(id));
        return () => { stop(); send.cancel(); };
      },
      snapshot: async () => {
        const out = [];
        for (const id of await d.jobs.store.list(me.role === 'submitter' ? 5000 : LIST_LIMIT)) {
          const v = await visible(id);
          if (v) out.push(v);
          if (out.length === LIST_LIMIT) break;
        }
        return { jobs: out };
      },
    });
  });
  return app;
}
