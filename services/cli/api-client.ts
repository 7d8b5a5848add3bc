// The HTTP side of the client commands (submit, approvals, approve, reject):
// where the API is, how to authenticate, typed calls of the REST routes of
// API.md, and a resumable reader of a job's Server-Sent Events, typed with the
// server's event union. Only types are imported from the server modules, so
// the CLI loads neither zod nor Redis (only the logger, for errors it
// deliberately ignores).
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import type { ListedApproval } from '../api/index.ts';
import { log } from '../log/index.ts';
import type { JobRequest, JobView, SubmitResponse } from '../jobs/index.ts';
import type { ApprovalAnswer, ApprovalEdit, ApprovalListStatus, PublicApproval, StreamEvent } from '../pipeline/index.ts';
import { SseParser, type SseEvent } from './sse-parser.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** parseArgs options every client command accepts. */
export const CONNECTION_OPTIONS = { url: { type: 'string' }, key: { type: 'string' } } as const;

export type JobRequestInput = z.input<typeof JobRequest>;
export type Submitted = z.infer<typeof SubmitResponse>;

/** Bad command-line input: the command prints it with its usage line and exits 2. */
export class UsageError extends Error {}

/** A failure worth one clear line on stderr (exit 1). */
export class CliError extends Error {}

export class UnreachableError extends CliError {
  constructor(readonly url: string, cause: unknown) {
    super(`cannot reach the ThinkFlow API at ${url} (is \`thinkflow serve\` running?)`, { cause });
  }
}

/** An answer in the `{"error":{"code","message","details"}}` shape (or a bare HTTP failure). */
export class ApiError extends CliError {
  constructor(readonly status: number, readonly code: string, readonly apiMessage: string, readonly details: unknown = null) {
    super(`${code}: ${apiMessage}`);
  }
}

export class StreamLostError extends CliError {}

export type Connection = { url: string; key: string | null; /** true when --url was given: echo it in suggested commands */ explicitUrl: boolean };

export function resolveConnection(flags: { url?: string | undefined; key?: string | undefined }, env: NodeJS.ProcessEnv = process.env): Connection {
  const raw = flags.url ?? env.THINKFLOW_URL ?? DEFAULT_URL;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new UsageError(`--url / THINKFLOW_URL must be an http(s) URL, got '${raw}'`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url / THINKFLOW_URL must be http(s), got '${raw}'`);
  const key = flags.key ?? env.THINKFLOW_API_KEY ?? '';
  return { url: raw.replace(/\/+$/, ''), key: key === '' ? null : key, explicitUrl: flags.url !== undefined };
}

/** One line, at most `max` characters: for tables and progress lines. */
export function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

async function apiErrorFrom(res: Response): Promise<ApiError> {
  // An unreadable or foreign error body still leaves the status to report: noted at debug level only.
  const text = await res.text().catch((err: unknown) => {
    log().debug({ err, status: res.status }, 'cli: the error body could not be read');
    return '';
  });
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    if (body.error && typeof body.error.code === 'string') {
      return new ApiError(res.status, body.error.code, String(body.error.message ?? ''), body.error.details ?? null);
    }
  } catch (err) {
    log().debug({ err, status: res.status }, 'cli: the error body is not JSON; reporting the bare status');
  }
  return new ApiError(res.status, `http_${res.status}`, oneLine(text, 200) || res.statusText || 'request failed');
}

const isAbort = (err: unknown) => err instanceof Error && err.name === 'AbortError';

/** An event of a job's stream: its `data` as received (what --json prints) and the same, typed by its `event:` name. */
export type JobStreamEvent = { id: string; name: string; data: unknown; event: StreamEvent };

/**
 * Reads one SSE event of a job's stream. The job stream's `data` leaves out
 * `type` (the `event:` line says it); the server checked every event against
 * the union when it read it, so it is typed here without a second check.
 */
export function jobStreamEvent(ev: SseEvent): JobStreamEvent {
  let data: unknown;
  try {
    data = JSON.parse(ev.data);
  } catch {
    throw new CliError(`event ${ev.id} (${ev.event}) carries data that is not JSON`);
  }
  return { id: ev.id, name: ev.event, data, event: { ...(data as object), type: ev.event } as StreamEvent };
}

export type EventStreamOptions = {
  lastEventId?: string;
  /** Reconnections in a row that bring no new event before giving up. @default 5 */
  maxRetries?: number;
  /** Until the server sends `retry:`. @default 1000 */
  retryDelayMs?: number;
  signal?: AbortSignal;
  onReconnect?: (info: { attempt: number; lastEventId: string; reason: string }) => void;
};

export class ApiClient {
  readonly url: string;
  readonly #key: string | null;

  constructor(conn: Pick<Connection, 'url' | 'key'>) {
    this.url = conn.url;
    this.#key = conn.key;
  }

  jobUrl(jobId: string): string {
    return `${this.url}/v1/jobs/${encodeURIComponent(jobId)}`;
  }

  eventsUrl(jobId: string): string {
    return `${this.jobUrl(jobId)}/events`;
  }

  async #fetch(url: string, init: RequestInit & { headers?: Record<string, string> }): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.#key) headers.authorization = `Bearer ${this.#key}`;
    try {
      return await fetch(url, { ...init, headers });
    } catch (err) {
      if (isAbort(err)) throw err;
      throw new UnreachableError(this.url, err);
    }
  }

  async #json<T>(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const init: RequestInit & { headers: Record<string, string> } = { method, headers: { accept: 'application/json', ...headers } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await this.#fetch(url, init);
    if (!res.ok) throw await apiErrorFrom(res);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new UnreachableError(this.url, err);
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`the API at ${this.url} answered ${method} ${new URL(url).pathname} with something that is not JSON`);
    }
  }

  createSession(body: { project?: string; approval?: string }, idempotencyKey?: string): Promise<{ session_id: string }> {
    return this.#json('POST', `${this.url}/v1/sessions`, body, idempotencyKey !== undefined ? { 'idempotency-key': idempotencyKey } : {});
  }

  /** PUT /v1/sessions/:id/workspace: the archive streamed as it is read. */
  async uploadWorkspace(sessionId: string, archive: Readable, type: 'application/gzip' | 'application/x-tar'): Promise<{ files: number; bytes: number }> {
    const res = await this.#fetch(`${this.url}/v1/sessions/${encodeURIComponent(sessionId)}/workspace`, {
      method: 'PUT', headers: { 'content-type': type, accept: 'application/json' },
      body: Readable.toWeb(archive) as ReadableStream, duplex: 'half',
    } as RequestInit & { headers: Record<string, string> });
    if (!res.ok) throw await apiErrorFrom(res);
    return (await res.json()) as { files: number; bytes: number };
  }

  /** GET of a path of this API whose body the caller streams (a download); an error answer throws ApiError. */
  async getBody(path: string): Promise<Response> {
    const res = await this.#fetch(`${this.url}${path}`, {});
    if (!res.ok) throw await apiErrorFrom(res);
    return res;
  }

  /** With an `idempotencyKey`, submitting again (e.g. after a network error) gives the same job, not a second one. */
  submitJob(request: JobRequestInput, idempotencyKey?: string): Promise<Submitted> {
    return this.#json('POST', `${this.url}/v1/jobs`, request, idempotencyKey !== undefined ? { 'idempotency-key': idempotencyKey } : {});
  }

  getJob(jobId: string): Promise<JobView> {
    return this.#json('GET', this.jobUrl(jobId));
  }

  cancelJob(jobId: string): Promise<JobView> {
    return this.#json('POST', `${this.jobUrl(jobId)}/cancel`);
  }

  steerJob(jobId: string, text: string, interrupt: boolean): Promise<{ message_id: string; job_id: string; interrupt: boolean }> {
    return this.#json('POST', `${this.jobUrl(jobId)}/messages`, { text, interrupt });
  }

  pauseJob(jobId: string): Promise<JobView> {
    return this.#json('POST', `${this.jobUrl(jobId)}/pause`);
  }

  resumeJob(jobId: string): Promise<JobView> {
    return this.#json('POST', `${this.jobUrl(jobId)}/resume`);
  }

  /** `status`: pending (the default), decided, expired or all (API.md additions 2026-12-01). */
  async approvals(status: ApprovalListStatus = 'pending'): Promise<{ approvals: ListedApproval[] }> {
    return this.#json('GET', `${this.url}/v1/approvals?status=${encodeURIComponent(status)}`);
  }

  /** `scope: 'prefix'` asks approve_for_session for the wider grant the approval offers (POLICY.md §7); `edit` goes with approve_edited. */
  answerApproval(token: string, decision: ApprovalAnswer, reason?: string, scope?: 'prefix', edit?: ApprovalEdit): Promise<{ approval: PublicApproval | null }> {
    return this.#json('POST', `${this.url}/v1/approvals/${encodeURIComponent(token)}`, {
      decision, ...(reason === undefined ? {} : { reason }), ...(scope ? { scope } : {}), ...(edit ?? {}),
    });
  }

  /**
   * The job's events, in order, ending after `job_finished`. A stream that
   * ends or breaks before it is reopened with Last-Event-ID, so no event is
   * lost or repeated; after `maxRetries` reconnections in a row without a new
   * event it gives up with StreamLostError. 4xx answers are not retried.
   */
  async *events(jobId: string, opts: EventStreamOptions = {}): AsyncGenerator<SseEvent> {
    const maxRetries = opts.maxRetries ?? 5;
    let lastId = opts.lastEventId ?? '';
    let delay = opts.retryDelayMs ?? 1000;
    let failures = 0;
    let everConnected = false;
    for (;;) {
      const parser = new SseParser(lastId);
      let progressed = false;
      let reason = 'the stream ended before job_finished';
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream' };
        if (lastId !== '') headers['last-event-id'] = lastId;
        const res = await this.#fetch(this.eventsUrl(jobId), { headers, ...(opts.signal ? { signal: opts.signal } : {}) });
        if (!res.ok) {
          const err = await apiErrorFrom(res);
          if (res.status < 500) throw err;
          reason = err.message;
        } else if (res.body) {
          everConnected = true;
          const reader = res.body.getReader();
          const decoder = new TextDecoder();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              for (const ev of parser.feed(decoder.decode(value, { stream: true }))) {
                lastId = ev.id;
                progressed = true;
                yield ev;
                if (ev.event === 'job_finished') return;
              }
              lastId = parser.lastEventId;
            }
          } finally {
            // Releasing a stream the server already closed can fail; the events read are what count.
            await reader.cancel().catch((err: unknown) => log().debug({ err }, 'cli: releasing the event stream failed'));
          }
        }
      } catch (err) {
        if (opts.signal?.aborted || isAbort(err) || err instanceof ApiError) throw err;
        // Nothing there at all on the first try: say so now rather than after the retries.
        if (err instanceof UnreachableError && !everConnected) throw err;
        reason = `the connection broke (${(err as Error).message})`;
      }
      if (parser.retryMs !== null) delay = parser.retryMs;
      failures = progressed ? 1 : failures + 1;
      if (failures > maxRetries) {
        throw new StreamLostError(`lost the event stream of job ${jobId} after ${maxRetries} reconnections (${reason}); last event id ${lastId || 'none'}`);
      }
      opts.onReconnect?.({ attempt: failures, lastEventId: lastId, reason });
      await sleep(delay, undefined, opts.signal ? { signal: opts.signal } : {});
    }
  }
}
