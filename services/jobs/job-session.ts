import { validatorCommand, type JobPipeline } from '../agent/index.ts';
import { checkSeeds, checkValidator, PipelineError, type Keys, type Pipeline, type PipelineRedis, type RunningJob, type SessionMeta } from '../pipeline/index.ts';
import { PolicyLoosensError } from '../policy/index.ts';
import type { JobRequest } from './job-schemas.ts';

// Where a job runs (API.md, additions 2026-12-01): a new session of its own,
// or with `session_id` an existing session of the same key, with its
// workspace; project, approval mode and policy are the session's unless the
// job sets them, and hold while the job runs. Either way the job claims the
// session (one job or upload at a time: 409 session_busy), and sees only its
// own part of the session's ledger and events.

export type JobSession = {
  sessionId: string;
  settings: RunningJob;
  /** records of the session's ledger before the job: the job's are the ones after */
  ledgerFrom: number;
  /** events of the session before the job: its SSE starts after them */
  fromSeq: number;
};

type Deps = { pipeline: Pipeline; redis: PipelineRedis; keys: Keys };
type Request = Pick<JobRequest, 'project' | 'approval' | 'policy' | 'files' | 'session_id' | 'validate'>;

export async function openJobSession(d: Deps, request: Request, owner: string | null, jobId: string, tightenOnly: boolean): Promise<JobSession> {
  if (request.session_id !== undefined) return onExisting(d, request, request.session_id, owner, jobId, tightenOnly);
  const p = d.pipeline;
  // The job's session will have a live container: it counts against the key's cap of those.
  const taken = await p.takeSessionId(owner, true);
  const sessionId = taken.id;
  let meta: SessionMeta;
  try {
    meta = await p.createSession({
      owner, project: request.project ?? null, approval: request.approval ?? 'never', policy: request.policy ?? null, jobId, sessionId, tightenOnly,
      ...(request.files ? { files: request.files } : {}),
      ...(request.validate ? { validator: validatorCommand(request.validate, 1) } : {}),
    });
  } catch (err) {
    await taken.undo();
    throw err;
  }
  const settings = { job_id: jobId, project: meta.project, approval: meta.approval, policy: meta.policy };
  await p.claims.claimJob(sessionId, settings);
  return { sessionId, settings, ledgerFrom: 0, fromSeq: 0 };
}

async function onExisting(d: Deps, request: Request, sid: string, owner: string | null, jobId: string, tightenOnly: boolean): Promise<JobSession> {
  const p = d.pipeline;
  const meta = await p.sessionMeta(sid);
  // Only the key's own sessions, whatever its role: another key's is not found.
  if (!meta || meta.owner !== owner) throw new PipelineError('session_not_found', `session ${sid} not found`);
  if (meta.deleted_at) throw new PipelineError('session_deleted', `session ${sid} was deleted`);
  const settings: RunningJob = {
    job_id: jobId, project: request.project ?? meta.project, approval: request.approval ?? meta.approval, policy: request.policy ?? meta.policy,
  };
  if (request.project !== undefined || request.policy !== undefined) validate(p, settings, tightenOnly);
  // Seeded files and the validator are judged as on a new session, under the settings the job runs with.
  const effective = { ...meta, ...settings };
  if (request.files) checkSeeds(p.gate, effective, request.files);
  if (request.validate) checkValidator(p.gate, effective, validatorCommand(request.validate, 1));
  await p.live.claimLive(owner, sid);
  await p.claims.claimJob(sid, settings);
  const [records, seq] = await d.redis.mget(d.keys.ledgerCounter(sid), d.keys.eventSeq(sid));
  return { sessionId: sid, settings, ledgerFrom: Number(records ?? 0), fromSeq: Number(seq ?? 0) };
}

function validate(p: Pipeline, s: RunningJob, tightenOnly: boolean): void {
  try {
    p.gate.validateSession(s.project, s.policy, tightenOnly);
  } catch (err) {
    if (err instanceof PolicyLoosensError) throw new PipelineError('policy_loosens', err.message, { reason: err.message, ...err.rule });
    throw new PipelineError('invalid_policy', (err as Error).message, { reason: (err as Error).message });
  }
}

/**
 * The pipeline as the job's runner sees it: the session's ledger from the
 * job's first record on (its counts, the records fed back to its model, the
 * commands a stop skips), everything else as is.
 */
export function scopedPipeline(p: Pipeline, ledgerFrom: number): JobPipeline {
  if (ledgerFrom === 0) return p;
  const mine = <T extends { index: number }>(records: T[]) => records.filter((r) => r.index > ledgerFrom);
  return new Proxy(p, {
    get(target, key) {
      if (key === 'entries') return async (sid: string) => mine(await target.entries(sid));
      if (key === 'uninjected') return async (sid: string) => mine(await target.uninjected(sid));
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
