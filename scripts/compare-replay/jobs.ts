// The jobs both sides run, and how one job is run and read back: submitted,
// its approvals answered over REST, its SSE stream read to job_finished, then
// its view and its session's ledger fetched and the session deleted.
import { DEMO_TASK, REVIEW_POLICY, REVIEW_TASK, SCENARIOS } from '../../services/replay-model/index.ts';

type Flow = 'thinkflow' | 'react';
type Answer = { decision: 'approve' | 'approve_for_session' | 'reject'; reason?: string };
type Pending = { token: string; job_id: string; command_id: string; tool: string; target: string };

export interface JobSpec {
  name: string;
  body: Record<string, unknown>;
  /** how an operator answers this job's approvals; unset = none are expected */
  answer?: (a: Pending) => Answer;
}

export interface SseEvent { event: string; id: string | null; data: unknown }

export interface RawDump {
  name: string;
  submitted: unknown;
  events: SseEvent[];
  view: unknown;
  ledger: unknown[];
  /** each approval seen, what was answered and what the service answered back */
  answers: { approval: Pending; answer: Answer; status: number; response: unknown }[];
}

/** The benchmark suite's tasks (bench/flows), each naming its scenario's `match`. */
const TASKS: Record<string, string> = {
  'web-skeleton': DEMO_TASK,
  'five-chapters': 'Write a five-chapter short story, one file per chapter, with a table of contents.',
  'midway-failure': 'Prepare the release notes for 1.1 and bump the version.',
  'operator-review': REVIEW_TASK,
};

// A rejected bash never runs: its `ls -la` would print times and differ on every run.
const ANSWERS: Record<Flow, (a: Pending) => Answer> = {
  thinkflow: (a) => (a.tool === 'write' ? { decision: 'approve' } : a.tool === 'edit' ? { decision: 'approve_for_session' } : { decision: 'reject', reason: 'compare-replay: no check needed' }),
  react: (a) => (a.tool === 'write' ? { decision: 'approve_for_session' } : a.tool === 'edit' ? { decision: 'approve' } : { decision: 'reject', reason: 'compare-replay: no check needed' }),
};

/** Every built-in scenario in both flows; the operator one twice: refused in `never` mode, and answered. */
export function jobSpecs(): JobSpec[] {
  for (const s of SCENARIOS) {
    const task = TASKS[s.name];
    if (!task || !task.toLowerCase().includes(s.match.toLowerCase())) throw new Error(`scenario ${s.name} has no task here that matches '${s.match}': add it to TASKS`);
  }
  const specs: JobSpec[] = [];
  for (const s of SCENARIOS) {
    for (const flow of ['thinkflow', 'react'] as const) {
      const task = TASKS[s.name]!;
      if (s.name !== 'operator-review') {
        specs.push({ name: `${s.name}/${flow}${task === DEMO_TASK && flow === 'thinkflow' ? ' (the demo job)' : ''}`, body: { task, flow } });
        continue;
      }
      specs.push({ name: `${s.name}/${flow} approval=never`, body: { task, flow, approval: 'never', policy: REVIEW_POLICY } });
      specs.push({ name: `${s.name}/${flow} approval=on-request, answered`, body: { task, flow, approval: 'on-request', policy: REVIEW_POLICY }, answer: ANSWERS[flow] });
    }
  }
  return specs;
}

async function call(url: string, init: RequestInit = {}, want = 200): Promise<unknown> {
  const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  const text = await res.text();
  if (res.status !== want) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : null;
}

/** Reads the job's SSE stream from its first event until job_finished. */
async function readEvents(url: string, signal: AbortSignal): Promise<SseEvent[]> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream' }, signal });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: ${res.status}`);
  const events: SseEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const field = (name: string) => block.split('\n').filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).replace(/^ /, ''));
      const data = field('data');
      if (data.length === 0) continue; // a comment (keep-alive)
      const event = { event: field('event')[0] ?? 'message', id: field('id')[0] ?? null, data: JSON.parse(data.join('\n')) as unknown };
      events.push(event);
      if (event.event === 'job_finished') return events;
    }
  }
  throw new Error(`${url}: the stream ended before job_finished (${events.length} events)`);
}

/** Answers this job's approvals as they come, until `done` resolves. */
async function answerApprovals(base: string, spec: JobSpec, jobId: string, done: Promise<unknown>, out: RawDump['answers']): Promise<void> {
  let finished = false;
  void done.finally(() => { finished = true; });
  const seen = new Set<string>();
  while (!finished) {
    const { approvals } = (await call(`${base}/v1/approvals?status=pending`)) as { approvals: Pending[] };
    for (const a of approvals.filter((x) => x.job_id === jobId && !seen.has(x.token))) {
      seen.add(a.token);
      // An approval in a job that expects none is itself a difference: refuse it so the job ends, and record it.
      const answer = spec.answer?.(a) ?? { decision: 'reject', reason: 'compare-replay: no approval was expected' };
      const res = await fetch(`${base}/v1/approvals/${encodeURIComponent(a.token)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) });
      out.push({ approval: a, answer, status: res.status, response: await res.json() });
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}

export async function runJob(base: string, spec: JobSpec, timeoutMs: number): Promise<RawDump> {
  const submitted = (await call(`${base}/v1/jobs`, { method: 'POST', body: JSON.stringify(spec.body) }, 202)) as { job_id: string; session_id: string };
  const signal = AbortSignal.timeout(timeoutMs);
  const answers: RawDump['answers'] = [];
  const reading = readEvents(`${base}/v1/jobs/${submitted.job_id}/events`, signal);
  const answering = answerApprovals(base, spec, submitted.job_id, reading.catch(() => undefined), answers);
  const [events] = await Promise.all([reading, answering]);
  const view = await call(`${base}/v1/jobs/${submitted.job_id}`);
  const { entries } = (await call(`${base}/v1/sessions/${submitted.session_id}/ledger`)) as { entries: unknown[] };
  await call(`${base}/v1/sessions/${submitted.session_id}`, { method: 'DELETE' }, 204);
  return { name: spec.name, submitted, events, view, ledger: entries, answers };
}
