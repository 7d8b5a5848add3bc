import type { Role } from '../config/index.ts';

/**
 * Who is calling: `id` is a stable, non-secret identity derived from the API
 * key (owner of jobs and sessions); `name` is what people see (the key's
 * configured name, else the id), e.g. as who decided an approval.
 */
export type Principal = { id: string; role: Role; name: string };

/** Typed `c.var` for every route and middleware. */
export type AppEnv = {
  Variables: { principal: Principal };
};
