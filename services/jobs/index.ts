// The jobs module's door. One export statement per line.
export { JobsService } from './jobs-service.ts';
export { JobStore } from './job-store.ts';
export { WebhookSender } from './webhooks.ts';
export { JobRequest, JobView, JobStatus, JobLimits, SubmitResponse, WebhookDelivery, FINAL_JOB_STATUSES } from './job-schemas.ts';
export { WebhookRefusedError } from './jobs-service.ts';
export type { StoredJob } from './job-store.ts';
