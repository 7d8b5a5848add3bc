import type Docker from 'dockerode';
import type { ExecutorClient } from './executor-client.ts';
import { freezeContainer, thawContainer, type Freeze, type PauseWith } from './frozen-container.ts';
import { sandboxLog } from './log.ts';
import { containerName } from './names.ts';
import { periodic } from './periodic.ts';
import { withSessionLock } from './session-lock.ts';

// Idle sessions are paused (cgroup freezer: frozen-container.ts), not left
// running: between two commands a session's container has nothing to do (a
// command's processes are all gone when it ends), yet its executor still
// wakes for timers and GC, and sessions spend most of their life waiting for
// a model or an operator. A frozen container keeps everything it holds (its
// files, /tmp, the executor's state, the open control socket, where a
// request written meanwhile just waits), so its next use only thaws it: a
// write to its freezer (or one Docker call; bench/sandbox, "idle pause"), against the start that a stop
// (the reaper, after THINKFLOW_SANDBOX_IDLE_STOP_S) costs.
//
// Only this process pauses, and only its own sessions: it alone knows what
// it has in flight there. One sweep per manager walks the entries in memory
// (no timer per session). Pausing holds the session lock and judges
// idleness again inside it, and `paused` is set before the call goes out, so
// a use that arrives meanwhile queues on the lock and thaws the container
// right after. A container found paused by another process (one that died)
// is thawed by whoever opens it (session-container.ts); the reaper judges it
// by the mark its pause left (egress-dirs.ts `mark`), since a frozen
// executor cannot answer its probe.

/** What pausing reads and writes of the manager's entry for a session. */
export type PausableEntry = {
  client?: ExecutorClient;
  connecting?: Promise<ExecutorClient>;
  lastUsed: number;
  inflight: number;
  /** Set under the session lock before the freeze goes out; a use that sees it thaws the container under the lock. */
  paused?: boolean;
  /** How this process froze it (thawed the same way); none when Docker said it was paused already. */
  frozen?: Freeze;
};

export type IdlePauseDeps = {
  docker: Docker;
  namePrefix: string;
  /** The cgroup freezer where this process reaches it, or always `docker pause` (frozen-container.ts). */
  pauseWith: PauseWith;
  /** The entry as it is now: a remove or a reap may have dropped it while the lock was awaited. */
  entry: (sessionId: string) => PausableEntry | undefined;
  /** Leaves a mark other processes' reapers read: the session was in use until now. */
  mark: (sessionId: string) => Promise<void>;
  /** Told when this process paused the session's container (true) or thawed it (false); must not throw. */
  changed?: PauseListener;
};

/** Who wants to know that a session's container froze or thawed (the pipeline marks it, so a request can thaw it ahead of its command). */
export type PauseListener = (sessionId: string, paused: boolean) => void;

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Nothing of this process in flight in the session's container, and no use for `minIdleMs`. */
function idle(e: PausableEntry, minIdleMs: number): boolean {
  return e.client?.alive === true && !e.connecting && e.inflight === 0 && Date.now() - e.lastUsed >= minIdleMs;
}

/** A sweep often enough that a container is paused at most a quarter of the idle time late, at most every 5 s. */
export function sweepPeriodMs(idlePauseMs: number): number {
  return Math.min(5_000, Math.max(50, Math.round(idlePauseMs / 4)));
}

const PING_TIMEOUT_MS = 2_000;

export class IdlePauses {
  readonly #d: IdlePauseDeps;
  readonly #idlePauseMs: number;
  #timer?: NodeJS.Timeout;

  constructor(deps: IdlePauseDeps, idlePauseMs: number) {
    this.#d = deps;
    this.#idlePauseMs = idlePauseMs;
  }

  /** Starts the manager's one sweep over `sessions()`; nothing when pausing is off (0). */
  start(sessions: () => Iterable<string>): void {
    if (this.#idlePauseMs <= 0 || this.#timer) return;
    this.#timer = periodic(sweepPeriodMs(this.#idlePauseMs), () => this.#sweep([...sessions()]),
      (err) => sandboxLog().warn({ err }, 'idle-pause sweep failed; the next period tries again'));
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Pauses the session's container when this process has nothing in flight
   * there and has not used it for `minIdleMs`; true when it is paused now.
   * Never pauses when pausing is off.
   */
  pause(sessionId: string, minIdleMs = 0): Promise<boolean> {
    if (this.#idlePauseMs <= 0) return Promise.resolve(false);
    // The lock connects and teardowns hold (the manager's #exclusive): never a pause in the middle of an open or a stop.
    return withSessionLock(this.#name(sessionId), async () => {
      const e = this.#d.entry(sessionId);
      if (!e || e.paused || !idle(e, minIdleMs)) return e?.paused === true;
      if (minIdleMs > 0 && !(await this.#executorIdle(e, minIdleMs))) return false;
      e.paused = true;
      try {
        e.frozen = await freezeContainer(this.#d.docker, this.#name(sessionId), this.#d.pauseWith);
      } catch (err) {
        // 409 "already paused": paused by someone else, or dockerd's flag still lagging a quick unpause
        // (unpauseContainer); either way the next use unpauses it, as when this pause went through.
        e.paused = statusOf(err) === 409 && /already paused/.test(messageOf(err));
        if (!e.paused) throw err;
      }
      await this.#d.mark(sessionId).catch((err: unknown) =>
        sandboxLog(sessionId).warn({ err }, 'pause: marking the session in use failed; another process\'s reaper may take it for idle since its last open'));
      this.#d.changed?.(sessionId, true);
      return true;
    });
  }

  /**
   * Thaws the container when this process paused it; call under the session
   * lock. False when that failed: logged, the client is closed and the
   * caller opens the container again (connectSession thaws what it finds paused).
   */
  async resume(sessionId: string, e: PausableEntry): Promise<boolean> {
    if (!e.paused) return true;
    try {
      await thawContainer(this.#d.docker, this.#name(sessionId), sessionId, e.frozen ?? { by: 'docker' });
      this.#d.changed?.(sessionId, false);
      return true;
    } catch (err) {
      sandboxLog(sessionId).warn({ err }, 'unpause failed; the container is opened again');
      e.client?.close();
      return false;
    } finally {
      e.paused = false;
      e.frozen = undefined;
    }
  }

  /**
   * A command is on its way: thaws the container now if this process paused
   * it, under the session lock, and only while the entry is still the one
   * held. Never opens a container: a session removed or reaped meanwhile stays
   * gone (its command, if any, opens it through the manager's own path).
   */
  thawAhead(sessionId: string): void {
    const e = this.#d.entry(sessionId);
    if (!e?.paused) return;
    e.lastUsed = Date.now(); // in use: the sweep must not pause it again before the command comes
    void withSessionLock(this.#name(sessionId), async () => {
      if (this.#d.entry(sessionId) === e && e.paused && e.client?.alive) await this.resume(sessionId, e);
    }).catch((err: unknown) => sandboxLog(sessionId).warn({ err }, 'thawing ahead of a command failed; the command thaws the container itself'));
  }

  /**
   * The sweep's own view is this process's: another worker process may have
   * run a command or served a read there since (a session's busy periods go
   * to whichever worker takes them, a warm sandbox's maker is seldom its
   * runner). The executor knows every use, whoever sent it: asked, it says
   * when it last worked (now while a command runs), and a session used
   * within the idle time is left running, its entry counted in use from then.
   */
  async #executorIdle(e: PausableEntry, minIdleMs: number): Promise<boolean> {
    const pong = await e.client!.request<{ lastActivity?: number }>('ping', {}, PING_TIMEOUT_MS);
    const last = pong.lastActivity ?? 0;
    if (Date.now() - last >= minIdleMs) return true;
    e.lastUsed = Math.max(e.lastUsed, last);
    return false;
  }

  #name(sessionId: string): string {
    return containerName(this.#d.namePrefix, sessionId);
  }

  async #sweep(sessions: string[]): Promise<void> {
    for (const sid of sessions) {
      const e = this.#d.entry(sid);
      // Judged again under the lock; this keeps sessions in use out of the lock's queue.
      if (!e || e.paused || !idle(e, this.#idlePauseMs)) continue;
      await this.pause(sid, this.#idlePauseMs).catch((err: unknown) =>
        sandboxLog(sid).warn({ err }, 'idle pause failed; the next sweep tries again'));
    }
  }
}
