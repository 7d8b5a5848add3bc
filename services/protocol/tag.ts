// What the stream parser knows about one protocol tag, and the single place
// that turns it into a Command or a ParseError (PROTOCOL.md §2, §3, §7).
import type { Command, ParseError, ParseErrorCode } from './command.ts';
import { isToolName, toolOf, type ToolName } from './tools.ts';

export const OPENING_TAG_LIMIT = 64 * 1024;
export const DEFAULT_BODY_LIMIT = 8 * 1024 * 1024;

export function takesBody(tool: ToolName): boolean {
  return toolOf(tool).body !== 'none';
}

/** One tag as the stream parser saw it; filled in as bytes arrive. */
export interface TagRecord {
  /** Tool name without the `tf-` prefix. */
  name: string;
  /** Attributes in order of appearance, values already entity-decoded. */
  attrs: Array<[string, string]>;
  /** Syntax trouble inside the opening tag (unquoted value, junk, upper case name …). */
  syntaxError: string | null;
  openingBytes: number;
  selfClosing: boolean;
  /** The closing tag (or `/>`) arrived. */
  closed: boolean;
  bodyBytes: number;
  /** Body held non-whitespace text (only tracked for tools without a body). */
  bodyHasText: boolean;
  /** Body content, when the tool takes one and it stayed under the limit. */
  content: string;
  /** For edit: the parsed parts, or null when the body is not `<old>…</old><new>…</new>`. */
  edit: { oldText: string; newText: string } | null;
}

export interface CompletionContext {
  bodyLimit: number;
  /** Returns false when the id was already used in this turn; records it either way. */
  claimId(id: string): boolean;
}

export type TagOutcome = { ok: true; command: Command } | { ok: false; error: ParseError };

function fail(code: ParseErrorCode, message: string, id: string | undefined, tool: string): TagOutcome {
  const error: ParseError = { code, message };
  if (id !== undefined) error.id = id;
  error.tool = tool;
  return { ok: false, error };
}

const ID_PATTERN = /^[0-9]+$/;

/** Checks a finished tag in the precedence order of PROTOCOL.md §7. */
export function completeTag(tag: TagRecord, ctx: CompletionContext): TagOutcome {
  const attrs = new AttributeView(tag.attrs);
  const repeated = attrs.repeated();
  const rawId = attrs.get('id');
  const wellFormedId = rawId !== undefined && ID_PATTERN.test(rawId) ? rawId : undefined;
  // Any tag with a well-formed id uses it up, broken or not (§7).
  const fresh = wellFormedId === undefined ? true : ctx.claimId(wellFormedId);
  const tagName = `tf-${tag.name}`;

  if (!isToolName(tag.name)) {
    return fail('unknown_tool', `unknown tool <${tagName}>`, wellFormedId, tag.name);
  }
  const tool = tag.name;
  const attributeProblem = tag.syntaxError ?? (repeated ? `attribute '${repeated}' is repeated` : checkAttributes(tool, attrs));
  if (attributeProblem) {
    return fail('bad_attribute', `<${tagName}>: ${attributeProblem}`, wellFormedId, tool);
  }
  if (rawId === undefined) return fail('missing_id', `<${tagName}> has no id attribute`, undefined, tool);
  if (wellFormedId === undefined) {
    return fail('bad_id', `<${tagName}> id "${rawId}" is not a string of decimal digits`, undefined, tool);
  }
  if (!fresh) {
    return fail('duplicate_id', `<${tagName}> id "${wellFormedId}" was already used (in this turn, or by a command that failed or was skipped); use a new id`, wellFormedId, tool);
  }
  for (const a of toolOf(tool).attributes) {
    if (a.required && !attrs.has(a.name)) {
      return fail(`missing_${a.name}` as ParseErrorCode, `<${tagName} id="${wellFormedId}"> needs a ${a.name} attribute`, wellFormedId, tool);
    }
  }
  if (tag.closed) {
    if (!takesBody(tool) && tag.bodyHasText) {
      return fail('unexpected_body', `<${tagName} id="${wellFormedId}"> takes no body, but text was found inside it`, wellFormedId, tool);
    }
    if (toolOf(tool).body === 'edit' && tag.edit === null) {
      return fail('bad_edit', `<${tagName} id="${wellFormedId}"> body must be <old>…</old> then <new>…</new>, with a non-empty <old>`, wellFormedId, tool);
    }
  }
  if (tag.openingBytes > OPENING_TAG_LIMIT) {
    return fail('too_large', `<${tagName} id="${wellFormedId}"> opening tag is ${tag.openingBytes} bytes, over the ${OPENING_TAG_LIMIT}-byte limit`, wellFormedId, tool);
  }
  if (tag.bodyBytes > ctx.bodyLimit) {
    return fail('too_large', `<${tagName} id="${wellFormedId}"> body is over the ${ctx.bodyLimit}-byte limit`, wellFormedId, tool);
  }
  if (!tag.closed) {
    return fail('unclosed_tag', `<${tagName} id="${wellFormedId}"> was still open when the stream ended`, wellFormedId, tool);
  }
  return { ok: true, command: toCommand(tool, wellFormedId, attrs, tag) };
}

/** Attribute lookup over the tag's few attributes; the first of a repeated name wins. */
class AttributeView {
  constructor(readonly list: ReadonlyArray<readonly [string, string]>) {}

  get(key: string): string | undefined {
    for (const [k, v] of this.list) if (k === key) return v;
    return undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  repeated(): string | null {
    const list = this.list;
    for (let i = 1; i < list.length; i++) {
      for (let j = 0; j < i; j++) if (list[i]![0] === list[j]![0]) return list[i]![0];
    }
    return null;
  }
}

/** The stream ended inside an opening tag: `unclosed_tag` only, with the id if it was read whole. */
export function unclosedOpeningTag(name: string, fullName: string, id: string | undefined): ParseError {
  const error: ParseError = { code: 'unclosed_tag', message: `<${fullName}> opening tag was still open when the stream ended` };
  if (id !== undefined && ID_PATTERN.test(id)) error.id = id;
  error.tool = name;
  return error;
}

function checkAttributes(tool: ToolName, attrs: AttributeView): string | null {
  const taken = toolOf(tool).attributes;
  for (const [key, value] of attrs.list) {
    if (key === 'id') continue;
    const kind = key === 'need_result' ? 'boolean' : taken.find((a) => a.name === key)?.kind;
    if (kind === undefined) return `attribute '${key}' is not taken by ${tool}`;
    if (kind === 'boolean' && value !== 'true' && value !== 'false') {
      return `attribute '${key}' must be "true" or "false", got "${value}"`;
    }
    if (kind === 'seconds' && !(ID_PATTERN.test(value) && Number(value) > 0)) {
      return `attribute '${key}' must be whole seconds > 0, got "${value}"`;
    }
  }
  return null;
}

function toCommand(tool: ToolName, id: string, attrs: AttributeView, tag: TagRecord): Command {
  const d = toolOf(tool);
  const command: Command = { id, tool, need_result: d.result === 'always' || attrs.get('need_result') === 'true' };
  // Field order as the Command schema lists them: text attributes, body, then the numeric and boolean ones.
  for (const a of d.attributes) {
    const value = attrs.get(a.name);
    if (value !== undefined && (a.kind === 'path' || a.kind === 'text')) command[a.name as 'path' | 'dest' | 'cmd'] = value;
  }
  if (d.body === 'content') command.content = tag.content;
  if (d.body === 'edit' && tag.edit) {
    command.old_text = tag.edit.oldText;
    command.new_text = tag.edit.newText;
  }
  for (const a of d.attributes) {
    const value = attrs.get(a.name);
    if (value !== undefined && a.kind === 'seconds') command.timeout = Number(value);
    if (value === 'true' && a.kind === 'boolean') command.allow_empty = true;
  }
  return command;
}

const ENTITIES: ReadonlyArray<[string, string]> = [['&quot;', '"'], ['&apos;', "'"], ['&amp;', '&'], ['&lt;', '<'], ['&gt;', '>']];

/** Decodes the five named entities; any other `&…` stays as written (§1). */
export function decodeAttributeValue(raw: string): string {
  let amp = raw.indexOf('&');
  if (amp < 0) return raw;
  // A hand loop: this runs for every attribute of every tag, and a regex with a
  // replacer callback was the parser's hottest spot on tag-dense streams.
  let out = '';
  let from = 0;
  while (amp >= 0) {
    const entity = ENTITIES.find(([name]) => raw.startsWith(name, amp));
    if (entity) {
      out += raw.slice(from, amp) + entity[1];
      from = amp + entity[0].length;
    }
    amp = raw.indexOf('&', amp + 1);
  }
  return out + raw.slice(from);
}
