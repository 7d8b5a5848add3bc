// The jobs module's door. One export statement per line.
export { JobsService } from './jobs-service.ts';
export { JobStore } from './job-store.ts';
export { WebhookSender } from './webhooks.ts';
