import type { IncomingMessage } from 'node:http';
import type net from 'node:net';
import { authorizeAndOpen } from './authorize.ts';
import type { SessionContext } from './context.ts';
import { answerSocket } from './reply.ts';
import { connectTarget } from './target.ts';
import type { UsageMeter } from './usage.ts';

/** `CONNECT host:port`: decide, dial the checked address, answer 200, then carry bytes both ways. */
export async function handleConnect(ctx: SessionContext, req: IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
  const parsed = connectTarget(req.url ?? '');
  if (!parsed.ok) {
    answerSocket(client, 400, parsed.message);
    return;
  }
  const opened = await authorizeAndOpen(ctx, parsed.target, client);
  if (!opened.ok) {
    if (opened.status === 0) client.destroy();
    else answerSocket(client, opened.status, opened.message);
    return;
  }
  const { upstream, usage } = opened;
  if (client.destroyed) {
    usage.fail(ctx.closing() ? 'session_closed' : 'client_closed');
    upstream.destroy();
    upstream.once('close', () => usage.end());
    return;
  }
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) upstream.write(head);
  splice(ctx, client, upstream, usage);
}

/**
 * Pipes both ways with each side's end passed on (half-close kept), ends
 * both on an error or when neither side moved a byte for `idleTimeoutMs`,
 * and reports the usage when the upstream socket is closed (its counters are
 * then final).
 */
function splice(ctx: SessionContext, client: net.Socket, upstream: net.Socket, usage: UsageMeter): void {
  const both = (reason: string) => {
    usage.fail(ctx.closing() ? 'session_closed' : reason);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', (err: NodeJS.ErrnoException) => both(`client: ${err.code ?? err.message}`));
  upstream.on('error', (err: NodeJS.ErrnoException) => both(`upstream: ${err.code ?? err.message}`));
  const idle = () => both('idle_timeout');
  client.setTimeout(ctx.limits.idleTimeoutMs, idle);
  upstream.setTimeout(ctx.limits.idleTimeoutMs, idle);
  client.pipe(upstream);
  upstream.pipe(client);
  // A side that closed without an end (a reset, a destroy) ends no pipe: pass it on.
  client.once('close', () => {
    if (ctx.closing()) both('session_closed');
    else if (!upstream.destroyed) upstream.end();
  });
  upstream.once('close', () => {
    if (ctx.closing()) usage.fail('session_closed');
    if (!client.destroyed) client.end();
    usage.end();
  });
}
