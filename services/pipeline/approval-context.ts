import { z } from 'zod';
import { PRECEDING_TEXT_BYTES, tailUtf8 } from '../protocol/index.ts';

// What an operator needs next to an approval to decide it (API.md, additions
// 2026-12-01): the job's task and metadata and what the model said just
// before the command (`context`), and, for a command that runs a workspace
// file, that file (`indirect`). One schema each; the API's listings, the
// operator stream's cards and the dashboard read them from here.
// The preceding text is kept with the ledger record when it is created
// (Ledger.create, only for a `prompt`); the file is read by the worker when
// the approval is requested (indirect-file.ts). The task and metadata are the
// job's and are added where approvals are listed (the API reads jobs).

/** The most of a job's task an approval carries (the job view has all of it). */
export const TASK_CHARS = 16 * 1024;
/**
 * The most of a job's metadata an approval carries, as JSON characters: each approval of a job repeats it,
 * and the submitter's metadata may be up to the whole body limit (the job view has all of it).
 */
export const METADATA_CHARS = 8 * 1024;
/** The most of a file `indirect` carries, in UTF-8 bytes. */
export const INDIRECT_BYTES = 64 * 1024;

export const ApprovalContext = z.object({
  /** the job's task (absent for a session without a job), its first TASK_CHARS characters */
  task: z.string().optional(),
  /** the task was longer and is cut */
  task_truncated: z.boolean().optional(),
  /** the job's metadata, as submitted: its first entries up to METADATA_CHARS of JSON */
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** the metadata was larger and is cut: entries past the bound are left out (a long string value is cut) */
  metadata_truncated: z.boolean().optional(),
  /** the model's reasoning and visible text just before the command's tag, its last 2 KiB ('' when none: a REST command, a network connection) */
  preceding_text: z.string(),
});
export type ApprovalContext = z.infer<typeof ApprovalContext>;

/** How the command runs the file: the program that reads it. */
export const IndirectRunner = z.enum(['bash', 'sh', 'python3', 'node', 'npm']);
export type IndirectRunner = z.infer<typeof IndirectRunner>;

export const IndirectFile = z.object({
  /** workspace-relative path of the file the command runs (`package.json` for an npm script) */
  path: z.string(),
  runner: IndirectRunner,
  /** npm only: the script's name; `content` is then its line from package.json */
  script: z.string().optional(),
  /** the file as text (UTF-8; invalid bytes shown as U+FFFD), its first INDIRECT_BYTES bytes */
  content: z.string(),
  /** the whole file's size in bytes (for an npm script, the script line's) */
  bytes: z.number().int().nonnegative(),
  /** `content` is the start only: the file is larger than INDIRECT_BYTES */
  truncated: z.boolean(),
  /** the latest record of the session that wrote, appended, edited or copied to `path` (tf-* tools; a bash command's writes are not known) */
  written_by_command_id: z.string().optional(),
  /** that record's ledger index and turn, to find it in the ledger */
  written_by_index: z.number().int().positive().optional(),
  written_by_turn: z.number().int().nonnegative().optional(),
});
export type IndirectFile = z.infer<typeof IndirectFile>;

/** The stored form of a preceding text: bounded again here, whoever the caller (the parser already cut it). */
export function boundPreceding(text: string | undefined): string {
  return text ? tailUtf8(text, PRECEDING_TEXT_BYTES) : '';
}

/**
 * `metadata` within METADATA_CHARS of JSON: whole when it fits, else its first entries that fit (the
 * string value that does not fit cut to what is left), and `truncated`. Entries are never split otherwise.
 */
export function boundMetadata(metadata: Record<string, unknown>, max = METADATA_CHARS): { metadata: Record<string, unknown>; truncated: boolean } {
  const whole = JSON.stringify(metadata);
  if (whole.length <= max) return { metadata, truncated: false };
  const out: Record<string, unknown> = {};
  let used = 2; // {}
  for (const [k, v] of Object.entries(metadata)) {
    const key = JSON.stringify(k).length + 2; // "k": and a comma
    const value = JSON.stringify(v) ?? 'null';
    if (used + key + value.length <= max) {
      out[k] = v;
      used += key + value.length;
      continue;
    }
    // A long string is cut to what is left (its JSON may be longer than its characters: escapes).
    if (typeof v === 'string' && max - used - key > 32) {
      let cut = v.slice(0, max - used - key - 2);
      while (JSON.stringify(cut).length > max - used - key) cut = cut.slice(0, Math.floor(cut.length * 0.9));
      out[k] = cut;
    }
    break;
  }
  return { metadata: out, truncated: true };
}

/** The start of `bytes` as text, at most `max` bytes, never cut inside a character. */
export function headUtf8(bytes: Buffer, max = INDIRECT_BYTES): { content: string; truncated: boolean } {
  if (bytes.length <= max) return { content: bytes.toString('utf8'), truncated: false };
  let end = max;
  // Back off continuation bytes (10xxxxxx) to the start of the character that does not fit.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { content: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

/** What an approval adds to its state: the worker's part of the context, and the file (none: not a file-running command). */
export type ApprovalContextFields = { context?: ApprovalContext; indirect?: IndirectFile | null };
