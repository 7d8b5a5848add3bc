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

const str = (v: unknown): v is string => typeof v === 'string';

/** Turns a provider tool call into a Command (id = the provider's tool-call id). */
export function commandFromToolCall(id: string, name: string, rawArguments: string, allowed: readonly string[]): NativeCallOutcome {
  if (!allowed.includes(name)) return { ok: false, error: `tool '${name}' is not offered in this flow (offered: ${allowed.join(', ')})` };
  let args: Record<string, unknown>;
  try {
    args = rawArguments.trim() === '' ? {} : (JSON.parse(rawArguments) as Record<string, unknown>);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error('arguments must be a JSON object');
  } catch (err) {
    return { ok: false, error: `arguments of ${name} are not a JSON object: ${(err as Error).message}` };
  }
  const need = (key: string): string | null => (str(args[key]) ? (args[key] as string) : null);
  const missing = (key: string): NativeCallOutcome => ({ ok: false, error: `${name} needs a string '${key}'` });
  const base = { id, need_result: true } as const;
  switch (name) {
    case 'write':
    case 'append': {
      const p = need('path');
      const c = need('content');
      if (p === null) return missing('path');
      if (c === null) return missing('content');
      return { ok: true, command: { ...base, tool: name, path: p, content: c, ...(name === 'write' ? { allow_empty: true } : {}) } };
    }
    case 'mkdir':
    case 'touch':
    case 'read': {
      const p = need('path');
      return p === null ? missing('path') : { ok: true, command: { ...base, tool: name, path: p } };
    }
    case 'copy': {
      const p = need('path');
      const d = need('dest');
      if (p === null) return missing('path');
      if (d === null) return missing('dest');
      return { ok: true, command: { ...base, tool: 'copy', path: p, dest: d } };
    }
    case 'edit': {
      const p = need('path');
      const o = need('old_text');
      const n = need('new_text');
      if (p === null) return missing('path');
      if (o === null) return missing('old_text');
      if (n === null) return missing('new_text');
      return { ok: true, command: { ...base, tool: 'edit', path: p, old_text: o, new_text: n } };
    }
    case 'bash': {
      const c = need('cmd');
      if (c === null) return missing('cmd');
      const t = args.timeout;
      if (t !== undefined && !(Number.isInteger(t) && (t as number) > 0)) return { ok: false, error: 'bash timeout must be whole seconds > 0' };
      return { ok: true, command: { ...base, tool: 'bash', cmd: c, ...(t !== undefined ? { timeout: t as number } : {}) } };
    }
    case 'list_files': {
      const dir = operand(need('path') ?? '.');
      if (!dir.ok) return dir;
      return { ok: true, command: { ...base, tool: 'bash', cmd: `find ${quote([dir.path])} -not -path '*/.git/*' | sort | head -n 1000` } };
    }
    case 'grep': {
      const pattern = need('pattern');
      if (pattern === null) return missing('pattern');
      const where = operand(need('path') ?? '.');
      if (!where.ok) return where;
      return { ok: true, command: { ...base, tool: 'bash', cmd: `grep -rnE -e ${quote([pattern])} -- ${quote([where.path])} | head -n 500` } };
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
