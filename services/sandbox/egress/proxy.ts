import { log as serviceLog } from '../../log/index.ts';
import { SessionServer, type SessionParts } from './session-server.ts';
import { resolveEgressLimits, type EgressProxyDeps } from './types.ts';
import { defaultDialer, defaultResolver } from './upstream.ts';

type Entry = { server: SessionServer; ready: Promise<void> };

/**
 * The worker's egress proxy: one Unix-socket server per session (the socket
 * says which session is asking). It decides nothing itself: `decide` and
 * `checkAddress` are the policy's; it resolves, dials, counts and enforces the
 * limits.
 */
export class EgressProxy {
  private readonly parts: SessionParts;
  private readonly sessions = new Map<string, Entry>();

  constructor(deps: EgressProxyDeps) {
    this.parts = {
      decide: deps.decide.bind(deps),
      checkAddress: deps.checkAddress.bind(deps),
      resolve: deps.resolve ?? defaultResolver,
      dial: deps.dial ?? defaultDialer,
      limits: resolveEgressLimits(deps.limits),
      socketMode: deps.socketMode ?? 0o666,
      log: deps.log ?? serviceLog().child({ component: 'egress' }),
    };
  }

  /**
   * Serves `sessionId` on `socketPath` (its directory is made 0700 if missing;
   * a stale socket file there is replaced). Listening again on the same path
   * is a no-op; on another path it is an error (close first).
   */
  async listen(sessionId: string, socketPath: string): Promise<void> {
    const existing = this.sessions.get(sessionId);
    if (existing) {
      if (existing.server.socketPath !== socketPath) {
        throw new Error(`egress: session ${sessionId} already listens on ${existing.server.socketPath}`);
      }
      return existing.ready;
    }
    const server = new SessionServer(sessionId, socketPath, this.parts);
    const ready = server.listen();
    this.sessions.set(sessionId, { server, ready });
    try {
      await ready;
    } catch (err) {
      if (this.sessions.get(sessionId)?.server === server) this.sessions.delete(sessionId);
      throw err;
    }
  }

  /** Ends the session's connections (their usage reports `session_closed`) and removes its socket file. Unknown ids are a no-op. */
  async close(sessionId: string): Promise<void> {
    const entry = this.sessions.get(sessionId);
    if (!entry) return;
    this.sessions.delete(sessionId);
    await entry.ready.catch(() => undefined);
    await entry.server.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }

  /** Client connections the session holds now (each holds a slot until its socket closes). */
  activeConnections(sessionId: string): number {
    return this.sessions.get(sessionId)?.server.active ?? 0;
  }

  /** Sessions being served. */
  sessionIds(): string[] {
    return [...this.sessions.keys()];
  }
}
