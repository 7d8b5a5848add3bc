import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config/index.ts';
import { log } from '../log/index.ts';

// The HTTP server's own bounds, before any route runs: how long a client may
// take to send its headers and its body, how long an idle keep-alive
// connection stays, and how many connections one address may hold open.
// Without them, thousands of silent sockets were held for 30–90 s each.

/** Refusals are logged at most this often (a flood must not flood the log too). */
const WARN_EVERY_MS = 10_000;

/** Options for `http.createServer` (requestTimeout bounds only the request, never a long answer or an SSE stream). */
export function httpServerOptions(h: Config['http']): ServerOptions {
  const requestTimeout = Math.max(h.requestTimeoutMs, h.headersTimeoutMs);
  return {
    headersTimeout: h.headersTimeoutMs,
    requestTimeout,
    keepAliveTimeout: h.keepAliveTimeoutMs,
    // Node checks both timeouts this often (30 s by default, which let sockets live 30 s past them).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(h.headersTimeoutMs / 2))),
  };
}

/**
 * Closes at once every connection past `maxPerAddress` from one client
 * address, and every connection that sends no byte within the headers
 * timeout (Node's own headers timeout starts with the first byte).
 */
export function guardConnections(server: Server, h: Config['http']): void {
  const open = new Map<string, number>();
  let lastWarn = 0;
  server.on('connection', (socket: Socket) => {
    const addr = socket.remoteAddress ?? 'unknown';
    const n = (open.get(addr) ?? 0) + 1;
    if (n > h.maxConnectionsPerAddress) {
      socket.destroy();
      if (Date.now() - lastWarn > WARN_EVERY_MS) {
        lastWarn = Date.now();
        log().warn({ address: addr, cap: h.maxConnectionsPerAddress }, 'http: a client address is at THINKFLOW_MAX_CONNECTIONS_PER_ADDRESS; its further connections are closed');
      }
      return;
    }
    open.set(addr, n);
    const silent = setTimeout(() => { if (socket.bytesRead === 0) socket.destroy(); }, h.headersTimeoutMs);
    silent.unref();
    socket.once('close', () => {
      clearTimeout(silent);
      const left = (open.get(addr) ?? 1) - 1;
      if (left <= 0) open.delete(addr);
      else open.set(addr, left);
    });
  });
}
