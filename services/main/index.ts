// The composition root's door: start a service for a role, or run the CLI.
export { startService } from './service.ts';
export type { ServiceHandle } from './service.ts';
export { createRuntime } from './runtime.ts';
export type { Runtime } from './runtime.ts';
export { main } from './cli.ts';
