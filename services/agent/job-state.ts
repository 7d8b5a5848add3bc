import { z } from 'zod';
import type { FlowName } from './flows.ts';

// What the job loop keeps about a job: its status, limits, token usage and
// command counts. The schemas live here, with the loop that enforces and
// updates them; jobs/ composes them into the REST job view (API.md, jobs).

export const JobStatus = z.enum(['queued', 'running', 'awaiting_approval', 'paused', 'succeeded', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof JobStatus>;

export const JobLimits = z.strictObject({
  /** Model calls. @default 8 */
  max_turns: z.number().int().min(1).max(200).default(8),
  /** Commands the model may issue over the whole job. @default 200 */
  max_commands: z.number().int().min(1).max(100_000).default(200),
  /** Wall-clock limit of the whole job. @default 900 */
  timeout_s: z.number().int().min(1).max(86_400).default(900),
  /** The watchdog: this many failed model turns in a row stop the job with `stuck` (watchdog.ts says what fails a turn). @default 3 */
  max_failed_turns_in_a_row: z.number().int().min(1).max(200).default(3),
});
export type JobLimits = z.infer<typeof JobLimits>;

/** A job's validator (API.md additions): a bash command run in the sandbox, through the policy, when the model ends. */
export const JobValidate = z.strictObject({
  cmd: z.string().min(1, 'validate.cmd must not be empty').max(16_384),
  /** The command's own timeout; unset = the sandbox's bash default (both capped by the sandbox's maximum). */
  timeout_s: z.number().int().min(1).max(86_400).optional(),
  /** Failed validations before the job fails with `validation_failed`. @default 3 */
  max_rounds: z.number().int().min(1).max(50).default(3),
});
export type JobValidate = z.infer<typeof JobValidate>;

/** How the job's validator went: rounds run so far, and whether the last one passed (null before the first). */
export const ValidationProgress = z.object({ rounds: z.number().int(), passed: z.boolean().nullable() });
export type ValidationProgress = z.infer<typeof ValidationProgress>;

const count = z.number().int();

export const JobUsage = z.object({
  prompt_tokens: count, completion_tokens: count, total_tokens: count,
  /** Set when the provider sent no usage and the figures were counted with a tokenizer. */
  estimated: z.boolean().optional(),
});
export type JobUsage = z.infer<typeof JobUsage>;

export const CommandCounts = z.object({ total: count, succeeded: count, failed: count, skipped: count, forbidden: count, rejected: count });
export type CommandCounts = z.infer<typeof CommandCounts>;

export function emptyCounts(): CommandCounts {
  return { total: 0, succeeded: 0, failed: 0, skipped: 0, forbidden: 0, rejected: 0 };
}

/** What a job is asked to do: the task, the files written before the first model call, the check of its result. */
export interface JobTask {
  task: string;
  files?: Record<string, string> | undefined;
  validate?: JobValidate | undefined;
}

/**
 * The part of the job view the loop reads and writes. jobs/'s JobView is a
 * superset, so the loop updates the very object jobs/ saves.
 */
export interface JobState {
  readonly job_id: string;
  readonly session_id: string;
  readonly flow: FlowName;
  readonly limits: JobLimits;
  status: JobStatus;
  turns: number;
  api_calls: number;
  usage: JobUsage;
  commands: CommandCounts;
  final_text: string | null;
  files_seeded: Array<{ path: string; bytes: number }>;
  /** Null when the job has no validator. */
  validation: ValidationProgress | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}
