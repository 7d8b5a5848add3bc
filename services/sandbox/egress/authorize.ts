import type net from 'node:net';
import type { SessionContext } from './context.ts';
import { authorityOf } from './target.ts';
import type { EgressDecision, EgressTarget } from './types.ts';
import { openUpstream } from './upstream.ts';
import { UsageMeter } from './usage.ts';

export type Opened =
  | { ok: true; upstream: net.Socket; usage: UsageMeter }
  /** status 0: the client is gone, there is no one to answer. */
  | { ok: false; status: number; message: string };

/**
 * One connection's way out: the decision (which may wait for an operator:
 * no timeout of the proxy runs meanwhile), then the checked dial. The client
 * going away aborts both, so a pending approval can be withdrawn; its slot was
 * the socket and is already free.
 */
export async function authorizeAndOpen(ctx: SessionContext, target: EgressTarget, client: net.Socket): Promise<Opened> {
  const gone = new AbortController();
  // The server's sockets allow half-open: a client that hung up (or sent its
  // FIN) before its connection exists only shows an end. It has nothing left
  // to send; it is closed, so its slot is free and its decision withdrawn.
  const onClose = () => {
    gone.abort(new Error('client_closed'));
    client.destroy();
  };
  client.once('close', onClose).once('end', onClose);
  if (client.destroyed || client.readableEnded) onClose();
  try {
    const decision = await decideSafely(ctx, target, gone.signal);
    if (!decision.allow) {
      ctx.log.info({ target, status: decision.status }, 'egress refused by policy');
      return { ok: false, status: gone.signal.aborted ? 0 : decision.status, message: decision.message };
    }
    const usage = new UsageMeter(decision.finish, ctx.log.child({ target: authorityOf(target) }));
    if (gone.signal.aborted) {
      usage.end(ctx.closing() ? 'session_closed' : 'client_closed');
      return { ok: false, status: 0, message: '' };
    }
    const up = await openUpstream(ctx, target, gone.signal, usage);
    if (!up.ok) {
      usage.end(ctx.closing() ? 'session_closed' : up.error);
      return up;
    }
    return { ok: true, upstream: up.socket, usage };
  } finally {
    client.off('close', onClose).off('end', onClose);
  }
}

/** A decision that failed is a refusal (500): the proxy fails closed. */
async function decideSafely(
  ctx: SessionContext,
  target: EgressTarget,
  signal: AbortSignal,
): Promise<EgressDecision | { allow: false; status: 500; message: string }> {
  try {
    const decision = await ctx.decide(ctx.sessionId, target, { signal });
    if (decision.allow) return decision;
    return { allow: false, status: 403, message: decision.message || `egress to ${authorityOf(target)} refused by policy` };
  } catch (err) {
    if (signal.aborted) ctx.log.debug({ err, target }, 'egress decision abandoned: the client went away');
    else ctx.log.error({ err, target }, 'egress decision failed; connection refused');
    return { allow: false, status: 500, message: `egress: the policy could not decide on ${authorityOf(target)} (see the service log)` };
  }
}
