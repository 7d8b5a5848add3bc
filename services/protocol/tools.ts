// The tool descriptor table: every fact about a tf-* tool lives in its one
// entry here (PROTOCOL.md §2). The parser, native tool calls, flows, the
// system prompt, policy defaults and path checks, ledger summaries, the CLI
// and the dashboard (through GET /dashboard/assets/tools.js) all read it.
// Adding a tool is its entry, the executor's function
// (sandbox-image/executor/file-tools.mjs TOOLS) and tests; nothing else.
import { z } from 'zod';

/** The Command fields a tag attribute can fill (command.ts holds the Command shape). */
export type AttributeField = 'path' | 'dest' | 'cmd' | 'timeout' | 'allow_empty';
/** How an attribute's value is checked and typed. */
export type AttributeKind = 'path' | 'text' | 'boolean' | 'seconds';

export type ToolAttribute = {
  name: AttributeField;
  kind: AttributeKind;
  /** A required attribute; missing, the tag fails with `missing_<name>` (§3, in declared order). */
  required?: true;
  /** path attributes: what the tool does there (shown to operators; every path attribute is checked by the policy). */
  access?: 'read' | 'write';
  /** The native function parameter's description. */
  describe: string;
  /** A boolean not offered as a native parameter: native calls always carry it as true (`allow_empty`: a call states its content outright). */
  nativeOmit?: true;
};

export type ToolResultFacts = { bytes_written?: number | null; stdout?: string | null; exit_code?: number | null };

export type ToolDescriptor = {
  /** `paths`: judged by path rules on each path attribute; `script`: split and judged by command rules (bash). */
  judged: 'paths' | 'script';
  /**
   * Judged by the rules naming this tool only: the tools of PROTOCOL.md §2, which policy files name
   * one by one. Any other tool also meets the forbid/prompt path rules of `write` (`read`) where it
   * writes (reads), so a path the policies protect stays protected from a tool they do not know yet.
   */
  ownRulesOnly?: true;
  /** One line: the native function's description. */
  summary: string;
  /** Label in the dashboard's "What will run". */
  verb: string;
  attributes: readonly ToolAttribute[];
  /** `content`: raw text; `edit`: `<old>…</old><new>…</new>`. */
  body: 'none' | 'content' | 'edit';
  /** `always`: behaves as need_result="true" whatever the tag says (read). */
  result: 'always' | 'optional';
  /** Built-in policy default when no rule matches and no layer sets one (POLICY.md §3.4). */
  defaultDecision: 'allow' | 'prompt' | 'forbid';
  risk: 'low' | 'medium' | 'high';
  /** Offered as a native tool in the `thinkflow` flow too, for looking around (PROTOCOL.md §5.7). */
  lookAround?: true;
  /** What the model is told stdout holds in a [THINKFLOW RESULT] (default `stdout`). */
  outputLabel?: string;
  /** The ledger's one-line summary of a success (default `ok`). */
  done?: (r: ToolResultFacts) => string;
  /**
   * The system prompt's example tag: its id (the order the examples are taught in), attribute values,
   * body, a note written right after it (with its own spacing), and `sameLine` to follow the previous example on its line.
   */
  example: { id: number; attrs: Readonly<Record<string, string>>; body?: string; note?: string; sameLine?: true };
};

const PATH = 'path relative to the workspace';
const path = (access: 'read' | 'write'): ToolAttribute => ({ name: 'path', kind: 'path', required: true, access, describe: PATH });

function lastLine(s: string): string {
  const line = s.trimEnd().split('\n').pop() ?? '';
  const flat = line.replace(/\s+/g, ' ').trim();
  return flat.length > 160 ? `${flat.slice(0, 159)}…` : flat;
}

const TABLE = {
  write: {
    judged: 'paths', ownRulesOnly: true, summary: 'Replace a file with content (parents are created).', verb: 'Write',
    attributes: [path('write'), { name: 'allow_empty', kind: 'boolean', describe: 'allow empty content', nativeOmit: true }],
    body: 'content', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    done: (r) => `wrote ${r.bytes_written ?? 0} bytes`,
    example: { id: 2, attrs: { path: 'src/app.py' }, body: '\nprint("hello")\n', note: '                      (one line break after the opening tag is dropped; content is raw text, no escaping)' },
  },
  append: {
    judged: 'paths', ownRulesOnly: true, summary: 'Append text to a file.', verb: 'Append',
    attributes: [path('write')], body: 'content', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    done: (r) => `appended ${r.bytes_written ?? 0} bytes`,
    example: { id: 3, attrs: { path: 'notes.md' }, body: 'more text' },
  },
  mkdir: {
    judged: 'paths', ownRulesOnly: true, summary: 'Create a directory and its parents.', verb: 'Create directory',
    attributes: [path('write')], body: 'none', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    example: { id: 1, attrs: { path: 'src' } },
  },
  touch: {
    judged: 'paths', ownRulesOnly: true, summary: 'Create an empty file or update its time.', verb: 'Touch',
    attributes: [path('write')], body: 'none', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    example: { id: 4, attrs: { path: 'a.txt' } },
  },
  copy: {
    judged: 'paths', ownRulesOnly: true, summary: 'Copy a file.', verb: 'Copy',
    attributes: [path('read'), { name: 'dest', kind: 'path', required: true, access: 'write', describe: 'destination path' }],
    body: 'none', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    example: { id: 5, attrs: { path: 'a.txt', dest: 'b.txt' }, sameLine: true },
  },
  edit: {
    judged: 'paths', ownRulesOnly: true, summary: 'Replace old_text, which must occur exactly once, by new_text.', verb: 'Edit',
    attributes: [path('write')], body: 'edit', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    example: { id: 6, attrs: { path: 'src/app.py' }, body: '<old>hello</old><new>world</new>', note: '   (<old> must occur exactly once)' },
  },
  read: {
    judged: 'paths', ownRulesOnly: true, summary: 'Read a file.', verb: 'Read',
    attributes: [path('read')], body: 'none', result: 'always', defaultDecision: 'allow', risk: 'low', lookAround: true,
    outputLabel: 'content',
    done: (r) => `read ${Buffer.byteLength(r.stdout ?? '')} bytes`,
    example: { id: 7, attrs: { path: 'src/app.py' }, note: '                       (you will get the content back)' },
  },
  bash: {
    judged: 'script', summary: 'Run a bash command in the workspace (no network).', verb: 'Run',
    attributes: [
      { name: 'cmd', kind: 'text', required: true, describe: 'the script' },
      { name: 'timeout', kind: 'seconds', describe: 'seconds' },
    ],
    body: 'none', result: 'optional', defaultDecision: 'prompt', risk: 'high', lookAround: true,
    done: (r) => {
      const last = lastLine(r.stdout ?? '');
      return last ? `exit ${r.exit_code ?? 0}: ${last}` : `exit ${r.exit_code ?? 0}`;
    },
    example: { id: 8, attrs: { cmd: 'python3 src/app.py', timeout: '60' }, note: '    (attribute values: escape " as &quot;, & as &amp;, < as &lt;)' },
  },
} as const satisfies Record<string, ToolDescriptor>;

export type ToolName = keyof typeof TABLE;
/** Every tool, in table order (the order PROTOCOL.md §2 lists them). */
export const TOOL_NAMES = Object.keys(TABLE) as [ToolName, ...ToolName[]];
export const ToolName = z.enum(TOOL_NAMES);
export const TOOLS: Readonly<Record<ToolName, ToolDescriptor>> = TABLE;

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TABLE, name);
}

export function toolOf(name: ToolName): ToolDescriptor {
  return TABLE[name];
}

/** The tools judged by path rules (every tool but bash). */
export const FILE_TOOLS = TOOL_NAMES.filter((t) => TABLE[t].judged === 'paths');

/** The path attributes of a tool, in declared order (`path`, then `dest` for copy). */
export function pathFields(tool: ToolName): Array<'path' | 'dest'> {
  return TABLE[tool].attributes.filter((a) => a.kind === 'path').map((a) => a.name as 'path' | 'dest');
}

type Targetable = { tool: ToolName; path?: string | null; dest?: string | null; cmd?: string | null };

/** The target an operator and the model see: the cmd of a script, else the path attributes joined by ` -> `. */
export function targetOf(c: Targetable): string {
  if (TABLE[c.tool]?.judged === 'script') return c.cmd ?? '';
  const fields = TABLE[c.tool] ? pathFields(c.tool) : ['path' as const];
  return fields.map((f) => c[f] ?? '').join(' -> ');
}
