import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type net from 'node:net';
import { authorizeAndOpen } from './authorize.ts';
import type { SessionContext } from './context.ts';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import { answerResponse } from './reply.ts';
import { absoluteTarget, authorityOf, type ParsedTarget } from './target.ts';
import type { UsageMeter } from './usage.ts';

/**
 * A plain request (`GET http://host:port/path`): judged on its absolute-form
 * target, sent in origin-form over its own upstream connection to the checked
 * address (each request of a kept-alive client connection is decided anew: it
 * may name another host).
 */
export async function handleRequest(ctx: SessionContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const parsed = absoluteTarget(req.url ?? '');
  if (!parsed.ok) {
    answerResponse(res, 400, parsed.message);
    return;
  }
  const opened = await authorizeAndOpen(ctx, parsed.target, req.socket);
  if (!opened.ok) {
    if (opened.status === 0) res.destroy();
    else answerResponse(res, opened.status, opened.message);
    return;
  }
  forward(ctx, req, res, parsed, opened.upstream, opened.usage);
}

function forward(
  ctx: SessionContext,
  req: IncomingMessage,
  res: ServerResponse,
  parsed: Extract<ParsedTarget, { ok: true }>,
  upstream: net.Socket,
  usage: UsageMeter,
): void {
  const where = authorityOf(parsed.target);
  const fail = (reason: string, status: number, message: string) => {
    usage.fail(ctx.closing() ? 'session_closed' : reason);
    answerResponse(res, status, message);
    upstream.destroy();
  };
  upstream.setTimeout(ctx.limits.idleTimeoutMs, () =>
    fail('idle_timeout', 504, `egress: ${where} sent nothing for ${ctx.limits.idleTimeoutMs} ms`));
  let answer: IncomingMessage | undefined;
  upstream.once('close', () => {
    if (ctx.closing()) usage.fail('session_closed');
    if (!answer) fail('upstream: closed before answering', 502, `egress: ${where} closed the connection without answering`);
    else if (!answer.complete) usage.fail('upstream: closed mid-response');
    usage.end();
  });
  const out = http.request({
    createConnection: () => upstream,
    method: req.method,
    path: parsed.path,
    headers: upstreamRequestHeaders(req.rawHeaders, parsed.target),
    setHost: false,
  });
  out.on('response', (got) => {
    answer = got;
    res.writeHead(got.statusCode ?? 502, got.statusMessage, clientResponseHeaders(got.rawHeaders));
    got.pipe(res);
    got.on('error', (err: NodeJS.ErrnoException) => fail(`upstream: ${err.code ?? err.message}`, 502, ''));
  });
  out.on('error', (err: NodeJS.ErrnoException) => {
    const code = err.code ?? err.message;
    fail(`upstream: ${code}`, 502, `egress: ${where} failed (${code})`);
  });
  req.on('error', (err: NodeJS.ErrnoException) => usage.fail(`client: ${err.code ?? err.message}`));
  req.pipe(out);
  // Done or abandoned, this request's upstream connection is not reused.
  res.once('close', () => {
    if (!res.writableFinished) usage.fail(ctx.closing() ? 'session_closed' : 'client_closed');
    upstream.destroy();
  });
}
