import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import { dirname } from 'node:path';
import type { Logger } from '../../log/index.ts';
import type { SessionContext } from './context.ts';
import { handleRequest } from './forward.ts';
import { answerSocket } from './reply.ts';
import { handleConnect } from './tunnel.ts';
import type { AddressCheck, DecideContext, Dialer, EgressDecision, EgressLimits, EgressTarget, Resolver } from './types.ts';

export type SessionParts = {
  decide(sessionId: string, target: EgressTarget, ctx: DecideContext): Promise<EgressDecision>;
  checkAddress(sessionId: string, address: string, port: number): AddressCheck;
  resolve: Resolver;
  dial: Dialer;
  limits: EgressLimits;
  socketMode: number;
  log: Logger;
};

// sun_path is 108 bytes with its terminating NUL.
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * One session's proxy: Node's HTTP server (its llhttp parser) on the Unix
 * socket that only this session's container has mounted, so the socket is
 * the session's identity. Connections over the cap are answered 429 before
 * the parser reads a byte of them; others hold a slot until their socket closes.
 */
export class SessionServer {
  private readonly server: http.Server;
  private readonly clients = new Set<net.Socket>();
  private readonly upstreams = new Set<net.Socket>();
  private readonly refused = new WeakSet<net.Socket>();
  private readonly ctx: SessionContext;
  private isClosing = false;

  constructor(
    readonly sessionId: string,
    readonly socketPath: string,
    private readonly parts: SessionParts,
  ) {
    const log = parts.log.child({ session_id: sessionId });
    this.ctx = {
      sessionId, limits: parts.limits, log, resolve: parts.resolve, dial: parts.dial,
      decide: parts.decide, checkAddress: parts.checkAddress,
      trackUpstream: (socket) => this.trackUpstream(socket),
      closing: () => this.isClosing,
    };
    const { headersTimeoutMs } = parts.limits;
    this.server = http.createServer({
      headersTimeout: headersTimeoutMs,
      // The whole-request timer is off: a request waits for `decide` (maybe an
      // operator) after its head; a stalled body is bounded by the idle timeout.
      requestTimeout: 0,
      // Node checks the head deadline on this interval: a fraction of it, so the bound is close to the setting.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
    });
    this.server.prependListener('connection', (socket: net.Socket) => this.admit(socket));
    this.server.on('connect', (req, socket: net.Socket, head: Buffer) => this.run('CONNECT', socket, () => handleConnect(this.ctx, req, socket, head)));
    this.server.on('request', (req, res) => this.run('request', req.socket, () => handleRequest(this.ctx, req, res)));
    this.server.on('upgrade', (_req, socket: net.Socket) =>
      answerSocket(socket, 501, 'egress: protocol upgrades are not forwarded on plain requests; use CONNECT'));
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => this.clientError(err, socket));
  }

  get active(): number {
    return this.clients.size;
  }

  async listen(): Promise<void> {
    if (Buffer.byteLength(this.socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw new Error(`egress socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes: ${this.socketPath}`);
    }
    await mkdir(dirname(this.socketPath), { recursive: true, mode: 0o700 });
    await removeStaleSocket(this.socketPath);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.socketPath, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.server.on('error', (err) => this.ctx.log.error({ err }, 'egress proxy server error'));
    await chmod(this.socketPath, this.parts.socketMode);
  }

  /** Stops accepting, ends every connection of the session (pending decisions are aborted) and removes the socket file. */
  async close(): Promise<void> {
    this.isClosing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.clients) s.destroy();
    for (const s of this.upstreams) s.destroy();
    await closed;
    await unlink(this.socketPath).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.ctx.log.warn({ err, path: this.socketPath }, 'egress socket file not removed');
    });
  }

  private admit(socket: net.Socket): void {
    socket.on('error', (err) => this.ctx.log.debug({ err }, 'egress client socket error'));
    const max = this.parts.limits.maxConnectionsPerSession;
    if (this.isClosing || this.clients.size >= max) {
      this.refused.add(socket);
      const why = this.isClosing ? 'the session is closing' : `at most ${max} connections at once per session`;
      answerSocket(socket, 429, `egress: too many connections (${why})`);
      return;
    }
    this.clients.add(socket);
    socket.once('close', () => this.clients.delete(socket));
  }

  private trackUpstream(socket: net.Socket): void {
    socket.on('error', (err) => this.ctx.log.debug({ err }, 'egress upstream socket error'));
    if (this.isClosing) socket.destroy();
    this.upstreams.add(socket);
    socket.once('close', () => this.upstreams.delete(socket));
  }

  private run(what: string, socket: net.Socket, handle: () => Promise<void>): void {
    if (this.refused.has(socket)) {
      socket.destroy();
      return;
    }
    handle().catch((err) => {
      this.ctx.log.error({ err }, `egress ${what} handler failed`);
      socket.destroy();
    });
  }

  private clientError(err: NodeJS.ErrnoException, socket: net.Socket): void {
    if (this.refused.has(socket) || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const [status, message] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, `egress: request head not received within ${this.parts.limits.headersTimeoutMs} ms`]
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'egress: request head too large']
          : [400, `egress: malformed request (${err.code ?? err.message})`];
    this.ctx.log.debug({ err }, 'egress client error');
    answerSocket(socket, status, message);
  }
}

/** A socket file left by a previous process is replaced; any other file at that path is an error, never removed. */
async function removeStaleSocket(path: string): Promise<void> {
  const st = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (!st) return;
  if (!st.isSocket()) throw new Error(`egress socket path exists and is not a socket: ${path}`);
  await unlink(path);
}
