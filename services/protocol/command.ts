import { z } from 'zod';

import { ToolName } from './tools.ts';

/** Where a command came from (ledger `flow`); `validator`: a job's `validate.cmd`, run when the model ends (API.md additions). */
export const CommandFlow = z.enum(['reasoning', 'text', 'native', 'api', 'validator']);
export type CommandFlow = z.infer<typeof CommandFlow>;

/**
 * A validated command, as the parser emits it and as every later stage
 * (policy, queue, sandbox, ledger) receives it. `allow_empty` is kept for the
 * executor's `empty_content` check; it is not part of `thinkflow parse` output.
 */
export const Command = z.object({
  id: z.string().regex(/^[0-9]+$/),
  tool: ToolName,
  path: z.string().optional(),
  dest: z.string().optional(),
  cmd: z.string().optional(),
  content: z.string().optional(),
  old_text: z.string().optional(),
  new_text: z.string().optional(),
  need_result: z.boolean(),
  timeout: z.number().int().positive().optional(),
  allow_empty: z.boolean().optional(),
});
export type Command = z.infer<typeof Command>;

/** Parse error codes of PROTOCOL.md §3, in the precedence order of §7. */
export const PARSE_ERROR_CODES = [
  'unknown_tool',
  'bad_attribute',
  'missing_id',
  'bad_id',
  'duplicate_id',
  'missing_path',
  'missing_dest',
  'missing_cmd',
  'unexpected_body',
  'bad_edit',
  'too_large',
  'unclosed_tag',
] as const;
export const ParseErrorCode = z.enum(PARSE_ERROR_CODES);
export type ParseErrorCode = z.infer<typeof ParseErrorCode>;

export const ParseError = z.object({
  code: ParseErrorCode,
  message: z.string(),
  id: z.string().optional(),
  tool: z.string().optional(),
});
export type ParseError = z.infer<typeof ParseError>;
