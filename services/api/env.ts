import type { Role } from '../config/env.ts';

/** Who is calling: `id` is a stable, non-secret identity derived from the API key. */
export type Principal = { id: string; role: Role };

/** Typed `c.var` for every route and middleware. */
export type AppEnv = {
  Variables: { principal: Principal };
};
