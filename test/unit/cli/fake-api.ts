// A stand-in for the ThinkFlow API (node:http on an ephemeral loopback port)
// that imitates the jobs and approvals routes of API.md closely enough for the
// client commands: the error shape, 202/409/404 answers, and an SSE stream
// that replays after Last-Event-ID and can break mid-way like a real network.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobView } from '../../../services/jobs/index.ts';

export type FakeEvent = { type: string; data: Record<string, unknown> };
export type SeenRequest = { method: string; path: string; headers: IncomingMessage['headers']; body: string };

export type FakeOptions = {
  /** Required Bearer key; unset = any caller. */
  key?: string;
  events?: FakeEvent[];
  /** The first events connection breaks (socket destroyed) right after this seq. */
  dropAfter?: number;
  /** Every events connection breaks before sending anything. */
  alwaysDrop?: boolean;
  /** Events connections stop after this seq and stay open. */
  hangAfter?: number;
  job?: JobView;
  approvals?: Record<string, unknown>[];
  /** what `GET /v1/approvals?status=` decided, expired or all answers */
  decided?: Record<string, unknown>[];
  /** token -> 'ok' | 'closed' | 'edit_forbidden' (an approve_edited answer is a 400); other tokens are unknown. */
  tokens?: Record<string, 'ok' | 'closed' | 'edit_forbidden'>;
};

export type FakeApi = { url: string; requests: SeenRequest[]; eventConnections: (string | undefined)[]; close(): Promise<void> };

export function jobView(over: Partial<JobView> = {}): JobView {
  return {
    job_id: 'job_1', session_id: 'ses_1', status: 'succeeded', task: 'make a thing', project: null,
    approval: 'never', flow: 'thinkflow', limits: { max_turns: 8, max_commands: 200, timeout_s: 900, max_failed_turns_in_a_row: 3 },
    model: 'replay-demo', model_source: 'replay', turns: 2, api_calls: 2,
    usage: { prompt_tokens: 120, completion_tokens: 45, total_tokens: 165, estimated: true },
    commands: { total: 3, succeeded: 2, failed: 1, skipped: 0, forbidden: 0, rejected: 0 },
    final_text: 'All done.\nSecond line.', files_seeded: [], validate: null, validation: null, error: null, changes: null, webhook: null, metadata: {},
    created_at: '2026-11-29T21:00:00.000Z', started_at: '2026-11-29T21:00:01.000Z', finished_at: '2026-11-29T21:00:09.000Z',
    ...over,
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const apiError = (res: ServerResponse, status: number, code: string, message: string, details: unknown = null) =>
  send(res, status, { error: { code, message, details } });

/** One SSE frame, line endings varied on purpose (the client must take CRLF, LF and CR). */
function frame(seq: number, e: FakeEvent): string {
  const nl = ['\n', '\r\n', '\r'][seq % 3]!;
  const data = JSON.stringify({ seq, job_id: 'job_1', at: '2026-11-29T21:00:02.000Z', ...e.data });
  return [`id: ${seq}`, `event: ${e.type}`, `data: ${data}`, '', ''].join(nl);
}

export async function startFakeApi(opts: FakeOptions = {}): Promise<FakeApi> {
  const requests: SeenRequest[] = [];
  const eventConnections: (string | undefined)[] = [];
  const events = opts.events ?? [];
  let dropped = false;

  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      requests.push({ method: req.method ?? '', path: url.pathname + url.search, headers: req.headers, body });
      if (opts.key && req.headers.authorization !== `Bearer ${opts.key}`) return apiError(res, 401, 'unauthorized', 'unknown API key');
      route(req.method ?? '', url, body, req, res);
    });
  });

  function route(method: string, url: URL, body: string, req: IncomingMessage, res: ServerResponse): void {
    const p = url.pathname;
    if (method === 'POST' && p === '/v1/jobs') {
      const parsed = JSON.parse(body) as { task?: string };
      if (parsed.task === 'boom') return apiError(res, 400, 'invalid_body', 'task is not acceptable', [{ path: 'task' }]);
      return send(res, 202, { job_id: 'job_1', session_id: 'ses_1', status: 'queued' });
    }
    if (method === 'GET' && p === '/v1/jobs/job_1') return send(res, 200, opts.job ?? jobView());
    if (method === 'POST' && p === '/v1/jobs/job_1/cancel') return send(res, 202, jobView({ status: 'cancelled' }));
    if (method === 'GET' && p === '/v1/jobs/job_1/events') return stream(req, res);
    if (method === 'GET' && p === '/v1/approvals') {
      const status = url.searchParams.get('status');
      if (!['pending', 'decided', 'expired', 'all'].includes(status ?? '')) return apiError(res, 400, 'invalid_query', 'status must be pending, decided, expired or all');
      const answered = (opts.decided ?? []).filter((a) => status === 'all' || (a.status === 'expired') === (status === 'expired'));
      return send(res, 200, { approvals: status === 'pending' ? opts.approvals ?? [] : answered });
    }
    const m = /^\/v1\/approvals\/([^/]+)$/.exec(p);
    if (method === 'POST' && m) {
      const token = decodeURIComponent(m[1]!);
      const state = opts.tokens?.[token];
      if (!state) return apiError(res, 404, 'approval_not_found', 'no such approval token');
      if (state === 'closed') return apiError(res, 409, 'approval_closed', 'approval already answered', { status: 'reject', decided_by: 'key-ops' });
      if (state === 'edit_forbidden') return apiError(res, 400, 'edit_forbidden', 'the edited command "curl x" is forbidden by rule no-network-tools (global layer)', { rule: 'no-network-tools' });
      const { decision, reason } = JSON.parse(body) as { decision: string; reason?: string };
      return send(res, 200, { approval: { token, session_id: 'ses_1', job_id: 'job_1', command_id: '3', tool: 'bash', target: 'rm -rf build', status: decision, reason: reason ?? null } });
    }
    apiError(res, 404, 'not_found', `no route ${method} ${p}`);
  }

  function stream(req: IncomingMessage, res: ServerResponse): void {
    const last = req.headers['last-event-id'];
    eventConnections.push(typeof last === 'string' ? last : undefined);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // A short retry so reconnection tests do not wait the default second.
    res.write(': fake thinkflow\nretry: 20\n\n');
    if (opts.alwaysDrop) return void setTimeout(() => res.socket?.destroy(), 10);
    const after = Number(last ?? 0);
    let text = '';
    for (let seq = after + 1; seq <= events.length; seq++) {
      text += frame(seq, events[seq - 1]!);
      if (opts.dropAfter === seq && !dropped) {
        dropped = true;
        // Half of the next frame goes out too: the client must drop the unterminated event, not dispatch it.
        const next = events[seq] ? frame(seq + 1, events[seq]!) : '';
        res.write(text + next.slice(0, Math.floor(next.length / 2)));
        return void setTimeout(() => res.socket?.destroy(), 30);
      }
      if (opts.hangAfter === seq) return void res.write(text);
    }
    // Written in awkward pieces so frames and CRLF pairs straddle chunks.
    const pieces = text.match(/[\s\S]{1,37}/g) ?? [];
    (async () => {
      for (const piece of pieces) {
        res.write(piece);
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    })().catch(() => res.destroy());
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    eventConnections,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
