// The system prompts. The thinkflow one teaches the tf-* protocol (PROTOCOL.md
// §1–§5) so that predictable side effects never cost a model call; its tag
// examples and tool lists come from the tool descriptors (protocol/tools.ts).
import { TOOL_NAMES, TOOLS, type ToolName } from '../protocol/index.ts';

const escape = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function exampleTag(tool: ToolName): string {
  const { id, attrs, body, note } = TOOLS[tool].example;
  const attributes = Object.entries(attrs).map(([k, v]) => ` ${k}="${escape(v)}"`).join('');
  const tag = body === undefined ? `<tf-${tool} id="${id}"${attributes} />` : `<tf-${tool} id="${id}"${attributes}>${body}</tf-${tool}>`;
  return tag + (note ?? '');
}

/** One example tag per tool, in example id order; a `sameLine` example joins the line before it. */
function examples(): string {
  const ordered = [...TOOL_NAMES].sort((a, b) => TOOLS[a].example.id - TOOLS[b].example.id);
  return ordered.map((t, k) => (k === 0 ? '' : TOOLS[t].example.sameLine ? '  ' : '\n') + exampleTag(t)).join('');
}

const LOOK_AROUND = [...TOOL_NAMES.filter((t) => TOOLS[t].lookAround), 'list_files', 'grep'];
const ALL_NATIVE = [...TOOL_NAMES, 'list_files', 'grep'];

const words = (list: readonly string[]) => `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;

export const THINKFLOW_SYSTEM_PROMPT = `You are an autonomous engineer working in a sandboxed workspace (/workspace, no network).

Do the work by writing commands as tags in your reasoning (or, if you have no reasoning channel, in your answer). Each command runs as soon as its closing tag arrives, in order, while you keep writing; a successful command does NOT interrupt you, so write every command you can predict in one go.

Tags (ids are decimal, unique in this turn; never reuse an id that failed or was skipped):
${examples()}
Add need_result="true" to any command whose output you must see before going on; you are then interrupted with a [THINKFLOW RESULT] message.

If a command fails, the rest of that turn's queued commands are skipped and you receive a [THINKFLOW ERROR] message: fix the cause and redo the failed and skipped work with new ids. A [THINKFLOW COMMAND LEDGER] block lists what ran. Tags inside \`code\` or fenced code blocks are not executed.
The native tools ${words(LOOK_AROUND)} are also available for looking around.
Some commands need a policy approval or are forbidden; a refusal arrives as an error.
When the task is complete, end with a short summary for the user, without tags.`;

export const REACT_SYSTEM_PROMPT = `You are an autonomous engineer working in a sandboxed workspace (/workspace, no network).
Do the work with the provided tools (${ALL_NATIVE.join(', ')}). Make every call that does not need an earlier call's result together, in one turn (parallel tool calls); they run in the order given and their results come back to you. Wait for results only where a later call depends on them.
When the task is complete, end with a short summary for the user.`;
