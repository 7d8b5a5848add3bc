import { z } from 'zod';
import { ApprovalMode, ProjectName } from '../policy/index.ts';
import { CommandCounts, FlowName, JobLimits, JobStatus, JobUsage, JobValidate, ValidationProgress } from '../agent/index.ts';

// The jobs REST contract (API.md): request body and the job view. One schema
// for validation, types and OpenAPI. Status, limits, usage and command counts
// are the agent loop's (agent/job-state.ts): import them from agent/.

export const FINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

export const JobRequest = z.strictObject({
  /** No cap of its own: the JSON body limit (THINKFLOW_MAX_JSON_BYTES) is the limit. */
  task: z.string().min(1, 'task must not be empty'),
  project: ProjectName.optional(),
  /** `never` unless set (with `session_id`: the session's unless set) */
  approval: ApprovalMode.optional().meta({ description: 'never unless set; with session_id, the session\'s unless set' }),
  /** Run on this existing session of the same key, with its workspace (409 session_busy while a job or upload runs there). */
  session_id: z.string().min(1).max(64).optional().meta({ description: 'an existing session of the same key: the job runs on its workspace; project, approval and policy are the session\'s unless set here' }),
  flow: FlowName.default('thinkflow'),
  files: z.record(z.string().min(1).max(4096), z.string()).optional(),
  /** A session policy layer, same shape as a policy file (an object, or its YAML text). */
  policy: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  limits: JobLimits.default({ max_turns: 8, max_commands: 200, timeout_s: 900, max_failed_turns_in_a_row: 3 }),
  /** Run when the model ends; a failure goes back to the model, `max_rounds` failures fail the job (`validation_failed`). */
  validate: JobValidate.optional(),
  webhook: z.url({ protocol: /^https?$/, error: 'webhook must be an http(s) URL' }).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type JobRequest = z.infer<typeof JobRequest>;

/** Paths changed in the job's workspace since its baseline, counted when the job finished (GET …/changes lists them). */
export const ChangeCounts = z.object({ added: z.number().int().nonnegative(), modified: z.number().int().nonnegative(), deleted: z.number().int().nonnegative() });
export type ChangeCounts = z.infer<typeof ChangeCounts>;

export const JobView = z.object({
  job_id: z.string(),
  session_id: z.string(),
  status: JobStatus,
  task: z.string(),
  project: z.string().nullable(),
  approval: ApprovalMode,
  flow: FlowName,
  limits: JobLimits,
  model: z.string(),
  /** 'replay' when the built-in replay model served the job (OPENAI_BASE_URL unset). */
  model_source: z.enum(['replay', 'openai-compatible']),
  turns: z.number().int(),
  api_calls: z.number().int(),
  usage: JobUsage,
  commands: CommandCounts,
  final_text: z.string().nullable(),
  /** Files written before the first model call (`files` of the request): not commands, never in the ledger. */
  files_seeded: z.array(z.object({ path: z.string(), bytes: z.number().int() })).default([]),
  /** The request's validator (null: none), and how its rounds went. */
  validate: JobValidate.nullable().default(null),
  validation: ValidationProgress.nullable().default(null),
  error: z.string().nullable(),
  /** null until the job finished (or when the workspace could not be compared: GET …/changes says why). */
  changes: ChangeCounts.nullable().default(null),
  webhook: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type JobView = z.infer<typeof JobView>;

export const SubmitResponse = z.object({ job_id: z.string(), session_id: z.string(), status: JobStatus });

/** One attempt to deliver the job's final view to its webhook. */
export const WebhookDelivery = z.object({
  /** the delivery's `X-ThinkFlow-Delivery`: the same on each of its retries */
  delivery_id: z.string(),
  attempt: z.number().int(), at: z.string(), ok: z.boolean(), status_code: z.number().int().optional(), error: z.string().optional(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;
