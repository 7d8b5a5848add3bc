import { withIds } from '../log/index.ts';
import type { Keys } from './keys.ts';
import type { PipelineRedis } from './redis.ts';
import type { SessionState } from './sessions.ts';

// Which sessions' containers are paused (sandbox/idle-pause.ts), where every
// process can see it: a `paused_at` field of the session's meta hash, set by
// the worker that froze the container and cleared when one thaws or opens it.
// The request path already reads that hash (sessions.ts), so a request for a
// paused session learns it for free and wakes the workers at once
// (Pipeline.prewake); the thaw then runs while the command is parsed,
// recorded and queued instead of after. A mark left by a worker that died is
// cleared by the next open of the container; until then it costs one wake
// message per request, never a wrong answer.

export class PauseMarks {
  readonly #redis: PipelineRedis;
  readonly #keys: Keys;

  constructor(redis: PipelineRedis, keys: Keys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** The sandbox manager's PauseListener: writes go out in call order on one connection, so a quick pause-thaw ends unmarked. */
  readonly changed = (sid: string, paused: boolean): void => {
    const write = paused ? this.#redis.pauseMark(this.#keys.sessionMeta(sid), Date.now()) : this.#redis.hdel(this.#keys.sessionMeta(sid), 'paused_at');
    write.catch((err: unknown) => withIds({ session_id: sid }).warn({ err, paused }, 'the session\'s pause mark could not be written; a request may thaw its container later than it could'));
  };
}

/**
 * Wakes the workers when the session's container is marked paused: the wake
 * message (worker-pool.ts) reaches the one holding it, which thaws it. The
 * mark comes with `known` when the caller just read the session; else one
 * read. Never throws: a failure only leaves the thaw to the command.
 */
export function wakeIfPaused(redis: PipelineRedis, keys: Keys, sid: string, known?: SessionState): void {
  const mark = known ? Promise.resolve(known.paused_at) : redis.hget(keys.sessionMeta(sid), 'paused_at');
  void mark.then((at) => (at ? redis.publish(keys.wakeChannel(), sid) : 0))
    .catch((err: unknown) => withIds({ session_id: sid }).warn({ err }, 'waking the workers ahead of a command failed; its container thaws when the command reaches it'));
}
