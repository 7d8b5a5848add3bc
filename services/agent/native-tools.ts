// Native tool calls (API.md, precise points): the function names equal the tool
// names, their parameters the tool's attributes and body (protocol/tools.ts),
// plus list_files and grep, which run as read-only bash. Every call becomes a
// Command and goes through the same policy, queue and ledger.
import { quote } from 'shell-quote';
import { isToolName, TOOL_NAMES, TOOLS, type Command, type ToolDescriptor, type ToolName } from '../protocol/index.ts';
import { normalizeWorkspacePath } from '../policy/index.ts';
import type { ToolSpec } from './messages.ts';

type Params = ToolSpec['parameters']['properties'];

function tool(name: string, description: string, properties: Params, required: string[]): ToolSpec {
  return { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } };
}

/** The body's parameters: what a tag carries between its opening and closing tags. */
const BODY_PARAMS: Record<ToolDescriptor['body'], Params> = {
  none: {},
  content: { content: { type: 'string', description: 'full text' } },
  edit: { old_text: { type: 'string', description: 'text to find' }, new_text: { type: 'string', description: 'replacement' } },
};

/** A tool's native function: its attributes (less `nativeOmit` ones) and its body, body parameters required. */
function fromDescriptor(name: ToolName): ToolSpec {
  const d = TOOLS[name];
  const properties: Params = {};
  const required: string[] = [];
  for (const a of d.attributes) {
    if (a.nativeOmit) continue;
    properties[a.name] = { type: a.kind === 'seconds' ? 'integer' : 'string', description: a.describe };
    if (a.required) required.push(a.name);
  }
  Object.assign(properties, BODY_PARAMS[d.body]);
  required.push(...Object.keys(BODY_PARAMS[d.body]));
  return tool(name, d.summary, properties, required);
}

export const NATIVE_TOOLS: Record<string, ToolSpec> = {
  ...Object.fromEntries(TOOL_NAMES.map((n) => [n, fromDescriptor(n)])),
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
  if (isToolName(name)) return toolFields(name, args, missing);
  switch (name) {
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

/** A protocol tool's call: its parameters are the command fields of the same names (fromDescriptor). */
function toolFields(name: ToolName, args: Args, missing: (key: string) => FieldsOutcome): FieldsOutcome {
  const d = TOOLS[name];
  const fields: Fields = { tool: name };
  for (const a of d.attributes) {
    const v = args[a.name];
    if (a.nativeOmit) continue;
    if (a.kind === 'seconds') {
      if (v !== undefined && !(Number.isInteger(v) && (v as number) > 0)) return { ok: false, error: `${name} ${a.name} must be whole seconds > 0` };
      if (v !== undefined) fields.timeout = v as number;
    } else if (str(v)) {
      fields[a.name as 'path' | 'dest' | 'cmd'] = v;
    } else if (a.required) {
      return missing(a.name);
    }
  }
  for (const key of Object.keys(BODY_PARAMS[d.body]) as Array<'content' | 'old_text' | 'new_text'>) {
    const v = args[key];
    if (!str(v)) return missing(key);
    fields[key] = v;
  }
  if (d.attributes.some((a) => a.nativeOmit && a.name === 'allow_empty')) fields.allow_empty = true;
  return { ok: true, fields };
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
