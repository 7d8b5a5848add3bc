import { pino, type Logger, type LoggerOptions } from 'pino';

// The service's one logger. JSON lines on stderr (stdout belongs to the CLI's
// output), pretty when stderr is a terminal. Each record about a command
// carries the ids that find it again: job_id, session_id, command_id.

export type { Logger } from 'pino';

/** The ids a log line about work carries; absent ones are left out. */
export type LogIds = { job_id?: string | null; session_id?: string | null; command_id?: string | null };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** A logger writing to `destination` (default stderr); pretty on a terminal unless `pretty: false`. */
export function createLogger(opts: { level?: LogLevel; pretty?: boolean; destination?: NodeJS.WritableStream } = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // err objects keep their message and stack under `err`
    serializers: { err: pino.stdSerializers.err },
  };
  const pretty = opts.pretty ?? (!opts.destination && process.stderr.isTTY === true);
  if (pretty) {
    return pino(options, pino.transport({ target: 'pino-pretty', options: { destination: 2, colorize: true } }));
  }
  return pino(options, (opts.destination ?? pino.destination({ dest: 2, sync: true })) as pino.DestinationStream);
}

let root: Logger = createLogger();

/** The process logger (level `info` until the composition root sets THINKFLOW_LOG_LEVEL's; tests capture lines with setLogger). */
export function log(): Logger {
  return root;
}

export function setLogger(logger: Logger): void {
  root = logger;
}

/** A child logger whose every line carries the given ids (null and undefined ones dropped). */
export function withIds(ids: LogIds, logger: Logger = root): Logger {
  const bindings: Record<string, string> = {};
  for (const [k, v] of Object.entries(ids)) if (typeof v === 'string' && v) bindings[k] = v;
  return logger.child(bindings);
}

/** The message of anything thrown, for a `reason` field. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
