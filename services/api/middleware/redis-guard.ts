import type { Context, MiddlewareHandler, Next } from 'hono';
import { log } from '../../log/index.ts';
import type { RedisState } from '../../pipeline/index.ts';
import type { AppEnv } from '../env.ts';
import { AppError } from '../errors.ts';

// While Redis is unreachable the API answers 503 `redis_unavailable` at once
// instead of letting a request wait on a connection that waits for Redis
// (the process's connections wait through an outage on purpose). A request
// already running when Redis goes away is answered the same way as soon as
// the outage is seen: what it wrote may or may not have happened, and its
// handler goes on in the background, finishing once Redis is back.

/** What the guard asks: the probe's latest state, and a call on each outage. */
export type RedisWatch = { readonly state: RedisState; onDown(f: () => void): () => void };

const LOST_MID_REQUEST = 'Redis became unreachable while this request ran: what it wrote may or may not have happened; read the ledger, or retry with the same Idempotency-Key';

export function redisGuard({ redis, exempt = ['/healthz', '/readyz', '/openapi.json', '/dashboard'] }: {
  redis: RedisWatch;
  /** paths (and their sub-paths) that do not touch Redis */
  exempt?: string[];
}): MiddlewareHandler<AppEnv> {
  const isExempt = (path: string) => exempt.some((p) => path === p || path.startsWith(`${p}/`));
  return async function redisGuard(c: Context<AppEnv>, next: Next) {
    if (isExempt(c.req.path)) return next();
    const before = redis.state;
    if (!before.up) return unavailable(c, `Redis is unreachable: ${before.reason ?? 'unknown'}`);
    let lost: () => void = () => {};
    const down = new Promise<'down'>((resolve) => { lost = () => resolve('down'); });
    const off = redis.onDown(lost);
    try {
      const run = next();
      if ((await Promise.race([run.then(() => 'done' as const), down])) === 'done') return;
      // The handler still runs; its own failure (rendered by onError) would reach nobody.
      run.catch((err: unknown) => log().error({ err, path: c.req.path }, 'api: a request answered 503 during a Redis outage failed later'));
      return unavailable(c, LOST_MID_REQUEST);
    } finally {
      off();
    }
  };
}

function unavailable(c: Context<AppEnv>, message: string): Response {
  return c.json(new AppError(503, 'redis_unavailable', message).toBody(), 503, { 'retry-after': '1' });
}
