import { z } from 'zod';
import { ApprovalMode, ProjectName } from '../policy/index.ts';

// The jobs REST contract (API.md): request body, limits, status and the job
// view. One schema for validation, types and OpenAPI.

export const JobStatus = z.enum(['queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof JobStatus>;
export const FINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

export const JobLimits = z.strictObject({
  /** Model calls. @default 8 */
  max_turns: z.number().int().min(1).max(200).default(8),
  /** Commands the model may issue over the whole job. @default 200 */
  max_commands: z.number().int().min(1).max(100_000).default(200),
  /** Wall-clock limit of the whole job. @default 900 */
  timeout_s: z.number().int().min(1).max(86_400).default(900),
});
export type JobLimits = z.infer<typeof JobLimits>;

export const JobRequest = z.strictObject({
  /** No cap of its own: the JSON body limit (THINKFLOW_MAX_JSON_BYTES) is the limit. */
  task: z.string().min(1, 'task must not be empty'),
  project: ProjectName.optional(),
  approval: ApprovalMode.default('never'),
  flow: z.enum(['thinkflow', 'react']).default('thinkflow'),
  files: z.record(z.string().min(1).max(4096), z.string()).optional(),
  /** A session policy layer, same shape as a policy file (an object, or its YAML text). */
  policy: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  limits: JobLimits.default({ max_turns: 8, max_commands: 200, timeout_s: 900 }),
  webhook: z.url({ protocol: /^https?$/, error: 'webhook must be an http(s) URL' }).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type JobRequest = z.infer<typeof JobRequest>;

export const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  /** Set when the provider sent no usage and the figures were counted with a tokenizer. */
  estimated: z.boolean().optional(),
});
export type Usage = z.infer<typeof Usage>;

export const CommandCounts = z.object({
  total: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  forbidden: z.number().int(),
  rejected: z.number().int(),
});
export type CommandCounts = z.infer<typeof CommandCounts>;

export const JobView = z.object({
  job_id: z.string(),
  session_id: z.string(),
  status: JobStatus,
  task: z.string(),
  project: z.string().nullable(),
  approval: ApprovalMode,
  flow: z.enum(['thinkflow', 'react']),
  limits: JobLimits,
  model: z.string(),
  /** 'replay' when the built-in replay model served the job (OPENAI_BASE_URL unset). */
  model_source: z.enum(['replay', 'openai-compatible']),
  turns: z.number().int(),
  api_calls: z.number().int(),
  usage: Usage,
  commands: CommandCounts,
  final_text: z.string().nullable(),
  /** Files written before the first model call (`files` of the request): not commands, never in the ledger. */
  files_seeded: z.array(z.object({ path: z.string(), bytes: z.number().int() })).default([]),
  error: z.string().nullable(),
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
  attempt: z.number().int(), at: z.string(), ok: z.boolean(), status_code: z.number().int().optional(), error: z.string().optional(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export function emptyCounts(): CommandCounts {
  return { total: 0, succeeded: 0, failed: 0, skipped: 0, forbidden: 0, rejected: 0 };
}
