// The jobs module's door. One export statement per line.
export { JobsService, WebhookRefusedError } from './jobs-service.ts';
export { JobStore } from './job-store.ts';
export type { StoredJob } from './job-store.ts';
export { JobRequest, JobView, SubmitResponse, WebhookDelivery, FINAL_JOB_STATUSES } from './job-schemas.ts';
export { JobEvents } from './job-events.ts';
export { WebhookSender, signBody, signTimestamped } from './webhooks.ts';
export { JobControlStore, MAX_MESSAGE_CHARS, MAX_PENDING_MESSAGES } from './job-control.ts';
