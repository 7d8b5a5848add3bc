import { log, withIds, type Logger } from '../log/index.ts';

// The sandbox's log lines: the service logger with `component: sandbox` and
// the session id, so a misbehaving container is traced to its session.

export function sandboxLog(sessionId?: string): Logger {
  const base = log().child({ component: 'sandbox' });
  return sessionId ? withIds({ session_id: sessionId }, base) : base;
}

export function logSandboxError(sessionId: string, msg: string, err?: unknown): void {
  sandboxLog(sessionId).error(err === undefined ? {} : { err }, msg);
}

/**
 * Waits for a start-up that may have failed. Its failure was already reported
 * to the caller that started it; the waiter only needs it settled, so the
 * reason is kept at debug level instead of being thrown a second time.
 */
export async function settled(p: Promise<unknown> | undefined, sessionId: string, what: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    sandboxLog(sessionId).debug({ err }, `${what} had failed (reported to its caller)`);
  }
}
