// The agent's door. One export statement per line.
export { modelEndpoint } from './model-client.ts';
export type { ModelEndpoint } from './model-client.ts';
