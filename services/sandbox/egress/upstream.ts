import { promises as dns } from 'node:dns';
import net from 'node:net';
import type { SessionContext } from './context.ts';
import { authorityOf } from './target.ts';
import type { Dialer, EgressTarget, Resolver } from './types.ts';
import type { UsageMeter } from './usage.ts';

export const defaultResolver: Resolver = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The lookup guard is never reached for an address; it makes a name passed by mistake an error instead of a second resolution. */
export const defaultDialer: Dialer = (address, port) =>
  net.connect({
    host: address,
    port,
    noDelay: true,
    lookup: (name, _options, callback) =>
      callback(new Error(`egress dial was given a name (${name}), not a checked address`), '', 4),
  });

export type Upstream =
  | { ok: true; socket: net.Socket }
  /** status 0: the client is gone, there is no one to answer. */
  | { ok: false; status: number; message: string; error: string };

const CLIENT_GONE = 'client_closed';

/**
 * Resolves the name once (an IP literal is not resolved), keeps the first
 * address the special-address rule allows, and dials exactly that address:
 * nothing resolves the name again between the check and the connection.
 * `connectTimeoutMs` bounds resolution and connect together.
 */
export async function openUpstream(
  ctx: SessionContext,
  target: EgressTarget,
  clientGone: AbortSignal,
  usage: UsageMeter,
): Promise<Upstream> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error('connect_timeout')), ctx.limits.connectTimeoutMs);
  const signal = AbortSignal.any([clientGone, deadline.signal]);
  try {
    const addresses = await addressesOf(ctx, target, signal);
    if (!addresses.ok) return addresses;
    const chosen = choose(ctx, addresses.list, target);
    if (!chosen.ok) return chosen;
    return await dial(ctx, chosen.address, target, signal, usage);
  } catch (err) {
    if (clientGone.aborted) return { ok: false, status: 0, message: '', error: CLIENT_GONE };
    if (deadline.signal.aborted) {
      const message = `egress: ${authorityOf(target)} did not answer within ${ctx.limits.connectTimeoutMs} ms`;
      return { ok: false, status: 504, message, error: 'connect_timeout' };
    }
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { ok: false, status: 502, message: `egress: cannot reach ${authorityOf(target)} (${code})`, error: `dial_failed: ${code}` };
  } finally {
    clearTimeout(timer);
  }
}

type Addresses = { ok: true; list: string[] } | Extract<Upstream, { ok: false }>;

async function addressesOf(ctx: SessionContext, target: EgressTarget, signal: AbortSignal): Promise<Addresses> {
  if (net.isIP(target.host)) return { ok: true, list: [target.host] };
  let found: string[];
  try {
    found = await untilAborted(ctx.resolve(target.host), signal);
  } catch (err) {
    if (signal.aborted) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { ok: false, status: 502, message: `egress: cannot resolve ${target.host} (${code})`, error: `resolve_failed: ${code}` };
  }
  // A resolver answer that is not an address would be resolved again by the dial: dropped.
  const list = [...new Set(found.filter((a) => net.isIP(a) !== 0))];
  if (list.length === 0) {
    return { ok: false, status: 502, message: `egress: ${target.host} has no address`, error: 'resolve_failed: no address' };
  }
  return { ok: true, list };
}

function choose(ctx: SessionContext, list: string[], target: EgressTarget): { ok: true; address: string } | Extract<Upstream, { ok: false }> {
  let firstRefusal: string | undefined;
  for (const address of list) {
    const check = ctx.checkAddress(ctx.sessionId, address, target.port);
    if (check.allowed) return { ok: true, address };
    firstRefusal ??= check.message;
  }
  ctx.log.info({ target, addresses: list }, 'egress refused: no allowed address');
  return { ok: false, status: 403, message: firstRefusal ?? 'egress: address refused', error: `address_refused: ${list.join(', ')}` };
}

async function dial(ctx: SessionContext, address: string, target: EgressTarget, signal: AbortSignal, usage: UsageMeter): Promise<Upstream> {
  const socket = ctx.dial(address, target.port);
  usage.dialled(address, socket);
  ctx.trackUpstream(socket);
  try {
    await connected(socket, signal);
  } catch (err) {
    socket.destroy();
    throw err;
  }
  return { ok: true, socket };
}

function connected(socket: net.Socket, signal: AbortSignal): Promise<void> {
  if (!socket.pending && !socket.destroyed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = (err?: unknown) => {
      socket.off('connect', onConnect).off('error', onError).off('close', onClose);
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onConnect = () => settle();
    const onError = (err: Error) => settle(err);
    const onClose = () => settle(new Error('closed before connecting'));
    const onAbort = () => settle(signal.reason);
    socket.once('connect', onConnect).once('error', onError).once('close', onClose);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A resolver takes no signal; its answer is simply not waited for once the connection is given up. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
