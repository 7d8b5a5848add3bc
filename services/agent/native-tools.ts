// Native tool calls (API.md, precise points): the function names equal the tool
// names, plus list_files and grep, which run as read-only bash. Every call
// becomes a Command and goes through the same policy, queue and ledger.
import { quote } from 'shell-quote';
import type { Command } from '../protocol/index.ts';
import { normalizeWorkspacePath } from '../policy/index.ts';
import type { ToolSpec } from './messages.ts';

type Params = ToolSpec['parameters']['properties'];

function tool(name: string, description: string, properties: Params, required: string[]): ToolSpec {
  return { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } };
}

const path = { type: 'string', description: 'path relative to the workspace' } as const;
const content = { type: 'string', description: 'full text' } as const;

export const NATIVE_TOOLS: Record<string, ToolSpec> = {
  write: tool('write', 'Replace a file with content (parents are created).', { path, content }, ['path', 'content']),
  append: tool('append', 'Append text to a file.', { path, content }, ['path', 'content']),
  mkdir: tool('mkdir', 'Create a directory and its parents.', { path }, ['path']),
  touch: tool('touch', 'Create an empty file or update its time.', { path }, ['path']),
  copy: tool('copy', 'Copy a file.', { path, dest: { type: 'string', description: 'destination path' } }, ['path', 'dest']),
  edit: tool('edit', 'Replace old_text, which must occur exactly once, by new_text.', {
    path, old_text: { type: 'string', description: 'text to find' }, new_text: { type: 'string', description: 'replacement' },
  }, ['path', 'old_text', 'new_text']),
  read: tool('read', 'Read a file.', { path }, ['path']),
  bash: tool('bash', 'Run a bash command in the workspace (no network).', {
    cmd: { type: 'string', description: 'the script' }, timeout: { type: 'integer', description: 'seconds' },
  }, ['cmd']),
  list_files: tool('list_files', 'List files under a directory.', { path: { type: 'string', description: 'directory, default "."' } }, []),
  grep: tool('grep', 'Search files for a regular expression.', {
    pattern: { type: 'string', description: 'extended regular expression' }, path: { type: 'string', description: 'where to search, default "."' },
  }, ['pattern']),
};

export function nativeTools(names: readonly string[]): ToolSpec[] {
  return names.map((n) => NATIVE_TOOLS[n]!);
}

export type NativeCallOutcome = { ok: true; command: Command } | { ok: false; error: string };

type Fields = Omit<Command, 'id' | 'need_result'>;
type FieldsOutcome = { ok: true; fields: Fields } | { ok: false; error: string };
type Args = Record<string, unknown>;

/** File tools: their required string arguments are the command fields of the same names. */
const FILE_TOOL_ARGS: Record<string, ReadonlyArray<'path' | 'content' | 'dest' | 'old_text' | 'new_text'>> = {
  write: ['path', 'content'], append: ['path', 'content'], mkdir: ['path'], touch: ['path'], read: ['path'],
  copy: ['path', 'dest'], edit: ['path', 'old_text', 'new_text'],
};

const str = (v: unknown): v is string => typeof v === 'string';

/** Turns a provider tool call into a Command (id = the provider's tool-call id). */
export function commandFromToolCall(id: string, name: string, rawArguments: string, allowed: readonly string[]): NativeCallOutcome {
  if (!allowed.includes(name)) return { ok: false, error: `tool '${name}' is not offered in this flow (offered: ${allowed.join(', ')})` };
  let args: Args;
  try {
    args = rawArguments.trim() === '' ? {} : (JSON.parse(rawArguments) as Args);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error('arguments must be a JSON object');
  } catch (err) {
    return { ok: false, error: `arguments of ${name} are not a JSON object: ${(err as Error).message}` };
  }
  const out = fieldsOf(name, args);
  return out.ok ? { ok: true, command: { id, need_result: true, ...out.fields } } : out;
}

function fieldsOf(name: string, args: Args): FieldsOutcome {
  const missing = (key: string): FieldsOutcome => ({ ok: false, error: `${name} needs a string '${key}'` });
  const fileArgs = FILE_TOOL_ARGS[name];
  if (fileArgs) {
    const picked: Partial<Record<(typeof fileArgs)[number], string>> = {};
    for (const key of fileArgs) {
      const v = args[key];
      if (!str(v)) return missing(key);
      picked[key] = v;
    }
    return { ok: true, fields: { tool: name as Fields['tool'], ...picked, ...(name === 'write' ? { allow_empty: true } : {}) } };
  }
  switch (name) {
    case 'bash': {
      if (!str(args.cmd)) return missing('cmd');
      const t = args.timeout;
      if (t !== undefined && !(Number.isInteger(t) && (t as number) > 0)) return { ok: false, error: 'bash timeout must be whole seconds > 0' };
      return { ok: true, fields: { tool: 'bash', cmd: args.cmd, ...(t !== undefined ? { timeout: t as number } : {}) } };
    }
    case 'list_files': {
      const dir = operand(str(args.path) ? args.path : '.');
      if (!dir.ok) return dir;
      return { ok: true, fields: { tool: 'bash', cmd: `find ${quote([dir.path])} -not -path '*/.git/*' | sort | head -n 1000` } };
    }
    case 'grep': {
      if (!str(args.pattern)) return missing('pattern');
      const where = operand(str(args.path) ? args.path : '.');
      if (!where.ok) return where;
      return { ok: true, fields: { tool: 'bash', cmd: `grep -rnE -e ${quote([args.pattern])} -- ${quote([where.path])} | head -n 500` } };
    }
    default:
      return { ok: false, error: `unknown tool '${name}'` };
  }
}

/**
 * A workspace path as a command operand: confined like every tool path, and
 * always starting with `./` (or being `.`), so no value (`-delete`, `-exec`)
 * can ever be read as an option or a find expression.
 */
function operand(raw: string): { ok: true; path: string } | { ok: false; error: string } {
  const n = normalizeWorkspacePath(raw);
  if (!n.ok) return { ok: false, error: n.reason };
  return { ok: true, path: n.path === '.' ? '.' : `./${n.path}` };
}
