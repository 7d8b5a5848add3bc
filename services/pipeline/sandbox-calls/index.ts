// Sandbox calls: the pipeline's Sandboxes over Redis (README.md). Re-exports only.
export { RemoteSandboxes } from './remote-sandboxes.ts';
export type { RemoteSandboxesDeps } from './remote-sandboxes.ts';
export { SandboxCallServer } from './server.ts';
export type { SandboxCallServerDeps } from './server.ts';
export { SandboxCallError, CALL_ERROR_STATUS } from './errors.ts';
export type { SandboxCallErrorCode } from './errors.ts';
export type { SandboxCallOptions } from './options.ts';
