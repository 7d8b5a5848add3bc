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
});
export type JobLimits = z.infer<typeof JobLimits>;

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

/** What a job is asked to do: the task and the files written before the first model call. */
export interface JobTask {
  task: string;
  files?: Record<string, string> | undefined;
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
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}
