/**
 * The sandbox's error log: one JSON line on stderr with the session id, so a
 * misbehaving container is traced to its session. (The service-wide logger
 * replaces this writer when one is configured.)
 */
export type SandboxLogger = (entry: { level: 'warn' | 'error'; session_id: string; msg: string; err?: string }) => void;

let sink: SandboxLogger = (entry) => process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), component: 'sandbox', ...entry })}\n`);

export function setSandboxLogger(logger: SandboxLogger): void {
  sink = logger;
}

export function logSandboxError(sessionId: string, msg: string, err?: unknown): void {
  sink({ level: 'error', session_id: sessionId, msg, ...(err !== undefined ? { err: err instanceof Error ? err.message : String(err) } : {}) });
}
