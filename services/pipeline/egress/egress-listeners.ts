import { reasonOf, withIds } from '../../log/index.ts';

// Which sessions this worker's egress proxy listens for. A command can only
// connect while it runs (what it leaves running is ended with it), and it runs
// in the worker that took its job: so the worker starts listening for the
// session right before a command, and stops once the session has been idle
// (no command, no open connection) for a while. A worker that takes over a
// session from a dead one listens on the same path (the stale socket is replaced).

/** The proxy as this needs it (sandbox/egress's EgressProxy). */
export interface EgressServer {
  listen(sessionId: string, socketPath: string): Promise<void>;
  close(sessionId: string): Promise<void>;
  closeAll(): Promise<void>;
  activeConnections(sessionId: string): number;
  sessionIds(): string[];
}

/** A session's listener is closed after this long without a command or a connection. */
export const EGRESS_IDLE_MS = 10 * 60_000;

export class EgressListeners {
  readonly #server: EgressServer;
  readonly #socketPath: (sessionId: string) => string;
  readonly #idleMs: number;
  readonly #lastUsed = new Map<string, number>();
  readonly #timer: NodeJS.Timeout;

  constructor(server: EgressServer, socketPath: (sessionId: string) => string, idleMs = EGRESS_IDLE_MS) {
    this.#server = server;
    this.#socketPath = socketPath;
    this.#idleMs = idleMs;
    this.#timer = setInterval(() => this.#sweep(), Math.min(60_000, idleMs)).unref();
  }

  /** Before a command: the session's proxy listens. A failure is logged: the command runs, and reaches no network. */
  async ready(sessionId: string): Promise<void> {
    this.#lastUsed.set(sessionId, Date.now());
    try {
      await this.#server.listen(sessionId, this.#socketPath(sessionId));
    } catch (err) {
      withIds({ session_id: sessionId }).error({ err: reasonOf(err) }, 'egress: the session proxy could not listen; its commands reach no network');
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#server.closeAll();
  }

  #sweep(): void {
    const now = Date.now();
    for (const sid of this.#server.sessionIds()) {
      if (this.#server.activeConnections(sid) > 0) this.#lastUsed.set(sid, now);
      if (now - (this.#lastUsed.get(sid) ?? 0) < this.#idleMs) continue;
      this.#lastUsed.delete(sid);
      this.#server.close(sid).catch((err: unknown) => withIds({ session_id: sid }).warn({ err: reasonOf(err) }, 'egress: closing an idle session proxy failed'));
    }
  }
}
