import { OpenAPIHono } from '@hono/zod-openapi';
import type { JobsService } from '../../jobs/index.ts';
import { withIds } from '../../log/index.ts';
import type { Firehose, Pipeline } from '../../pipeline/index.ts';
import { approvalCard } from '../approval-view.ts';
import { jobFacts, withJobContext, type JobFacts } from '../approval-context.ts';
import type { CardViews } from '../card/card-views.ts';
import type { AppEnv } from '../env.ts';
import { ApprovalsStreamEvent, JobsStreamEvent } from '../live-events.ts';
import { streamFeed, throttleByKey } from '../live-feed.ts';
import { route, sse } from '../openapi.ts';
import type { StreamCaps } from '../stream-caps.ts';

// Live streams across sessions, for the dashboard and any operator tool:
// `GET /v1/approvals/events` (operators: pending approvals as cards, and each
// answer or expiry as it happens) and `GET /v1/jobs/events` (the jobs the
// caller may see, each time one changes). Each stream's events are one union
// of live-events.ts: the document shows it and `push` sends only its members.

export type LiveDeps = {
  pipeline: Pick<Pipeline, 'approvals'>; views: CardViews; firehose: Firehose; streams: StreamCaps;
  /** the jobs' tasks and metadata, for each card's `context` (approval-context.ts) */
  jobFacts?: JobFacts;
};

const LIST_LIMIT = 100;

const approvalsRoute = route({
  method: 'get', path: '/events', id: 'streamApprovals', summary: 'Pending approvals and their answers, live (SSE)', auth: 'operator', capped: true,
  ok: {
    200: sse('SSE across all sessions: `snapshot` {approvals: cards} on every (re)connect, then `approval` (a card: the approval with its command, edit diff (null with `diff_truncated`, `diff_note` and `edit_sides` of both sides {bytes, lines, sha256} past the THINKFLOW_DIFF_MAX_* limits), bash segments (each as written in the script), grant scope in words, `recent` (the session\'s last ledger entries before this command, not the ones queued after it), `context` {task?, task_truncated?, metadata?, preceding_text}, and for a command that runs a workspace file `indirect` with `indirect_lines` (a shell script\'s lines, each split into parts with its decision)) and `resolution` {token, session_id, job_id, command_id, status, decision, decided_by, decided_at, reason} when one is answered or expires', ApprovalsStreamEvent),
  },
});

const jobsRoute = route({
  method: 'get', path: '/events', id: 'streamJobs', summary: 'The jobs the key may see, live (SSE)', auth: 'any', capped: true,
  ok: { 200: sse('SSE of the jobs the key may see: `snapshot` {jobs} on every (re)connect, then `job` (the job view) whenever one changes', JobsStreamEvent) },
});

export function approvalEventRoutes(d: LiveDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(approvalsRoute, (c) => {
    const a = d.pipeline.approvals;
    const facts = d.jobFacts ?? jobFacts(null);
    return streamFeed<ApprovalsStreamEvent>(c, {
      label: 'approvals stream',
      streams: d.streams,
      listen: (push) => d.firehose.listen({
        event: (e) => {
          if (e.type !== 'approval_requested' || !e.approval) return;
          void a.get(e.approval.token)
            .then(async (s) => { if (s?.status === 'pending') push('approval', await approvalCard(d.views, (await withJobContext(facts, [s]))[0]!)); })
            .catch((err: unknown) => withIds({ session_id: e.session_id, job_id: e.job_id }).error({ err }, 'approvals stream: the card could not be built'));
        },
        answered: (token) => {
          void a.get(token).then((s) => {
            if (!s || s.status === 'pending') return;
            const { token: t, session_id, job_id, command_id, status, decision, decided_by, decided_at, reason } = s;
            push('resolution', { token: t, session_id, job_id, command_id, status, decision, decided_by, decided_at, reason });
          }).catch((err: unknown) => withIds({}).error({ err }, 'approvals stream: the answer could not be read'));
        },
      }),
      snapshot: async () => ({ approvals: await Promise.all((await withJobContext(facts, await a.listPending())).map((s) => approvalCard(d.views, s))) }),
    });
  });
  return app;
}

export function jobEventRoutes(d: Omit<LiveDeps, 'pipeline' | 'views'> & { jobs: JobsService }): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(jobsRoute, (c) => {
    const me = c.var.principal;
    const visible = async (id: string) => {
      const job = await d.jobs.store.get(id);
      return job && (me.role !== 'submitter' || job.owner === me.id) ? job.view : null;
    };
    return streamFeed<JobsStreamEvent>(c, {
      label: 'jobs stream',
      streams: d.streams,
      listen: async (push) => {
        // A busy job's view is written often: send it at most 4 times a second.
        const send = throttleByKey(250, (id) => {
          void visible(id).then((v) => v && push('job', v))
            .catch((err: unknown) => withIds({ job_id: id }).error({ err }, 'jobs stream: the job could not be read'));
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
