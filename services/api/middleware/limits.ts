import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

/** After a 413, at most this much more of the body is read and thrown away before the connection is cut. */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** …for at most this long, or this long without a byte (nginx: lingering_time, lingering_timeout). */
const LINGER_MAX_MS = 30_000;
const LINGER_IDLE_MS = 5_000;

export type NodeBindings = { incoming: IncomingMessage; outgoing: ServerResponse };

/** The Node request and response under @hono/node-server; null elsewhere (app.request in tests). */
export function nodeOf(c: Context): NodeBindings | null {
  const env = c.env as Partial<NodeBindings> | undefined;
  return env?.incoming && env.outgoing && 'socket' in env.incoming ? (env as NodeBindings) : null;
}

/**
 * Request body cap; over it → 413 in the usual error shape, checked on
 * Content-Length and again while reading, so chunked bodies are capped too.
 * Under @hono/node-server the body is read straight from the socket, and a
 * 413 is followed by a lingering close (see `answerThenLinger`).
 * @example app.post('/v1/sessions', maxBody(2 * 1024 * 1024), handler)
 */
export function maxBody(maxSize: number): MiddlewareHandler<AppEnv> {
  const tooLarge = () => new AppError(413, 'payload_too_large', `request body over ${maxSize} bytes`, { details: { max_bytes: maxSize } });
  // Other runtimes (and app.request in tests): hono's own limit.
  const portable = bodyLimit({ maxSize, onError: () => { throw tooLarge(); } });
  return async function maxBody(c: Context<AppEnv>, next: Next) {
    const node = nodeOf(c);
    if (!node) return portable(c, next);
    const { incoming } = node;
    const declared = incoming.headers['content-length'];
    if (declared !== undefined && incoming.headers['transfer-encoding'] === undefined && Number(declared) > maxSize) {
      return answerThenLinger(node, 413, tooLarge().toBody());
    }
    const body = await readUpTo(incoming, maxSize);
    if (body === null) return answerThenLinger(node, 413, tooLarge().toBody());
    const raw = c.req.raw;
    // The signal is node-server's: it still fires when the client goes away.
    c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: new Uint8Array(body), signal: raw.signal });
    await next();
  };
}

/** The whole body, or null as soon as it passes `max` bytes (the rest stays unread). */
function readUpTo(incoming: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      done();
      incoming.pause();
      resolve(null);
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(new AppError(400, 'invalid_body', `the request body ended early: ${err.message}`, { cause: err }));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
  });
}

/**
 * Sends the answer (a 413, or any answer given before the body was read
 * whole) at once, then reads and discards the rest of the body before
 * closing (a lingering close). Closing with unread bytes makes the kernel
 * reset the connection, and a client that writes its whole body before
 * reading (Node's http, fetch, Python's requests) would then see EPIPE or
 * ECONNRESET instead of the answer.
 */
export function answerThenLinger({ incoming, outgoing }: NodeBindings, status: number, payload: unknown): Response {
  const body = JSON.stringify(payload);
  outgoing.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  outgoing.write(body);
  let discarded = 0;
  const close = () => {
    clearTimeout(total);
    clearTimeout(idle);
    incoming.off('data', onData);
    // Node closes the connection once the response ends; bytes past the bound get the reset.
    if (!outgoing.writableEnded) outgoing.end();
  };
  const total = setTimeout(close, LINGER_MAX_MS);
  const idle = setTimeout(close, LINGER_IDLE_MS);
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    idle.refresh();
    if (discarded > LINGER_MAX_BYTES) close();
  };
  if (incoming.readableEnded) close();
  else {
    incoming.on('data', onData);
    incoming.once('end', close);
    incoming.once('error', close);
    incoming.resume();
  }
  // Tells @hono/node-server the answer is already on the wire; the status is for the metrics.
  return new Response(null, { status, headers: { 'x-hono-already-sent': '1' } });
}
