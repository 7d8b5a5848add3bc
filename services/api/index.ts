// Public surface of the HTTP API. Re-exports only.
export { createApp } from './app.ts';
export { ViewPool } from './card/view-pool.ts';
export { AppError, toAppError } from './errors.ts';
export type { AppEnv } from './env.ts';
export type { AppDeps } from './app.ts';
export type { DecidedApproval, ListedApproval, PendingApproval } from './schemas.ts';
export { auth, requireRole, principalId } from './middleware/auth.ts';
