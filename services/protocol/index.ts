// Public surface of the tf-* protocol core: only what a file outside protocol/ imports.
// Pure: no I/O anywhere under protocol/.
export { Command, CommandFlow, ParseError } from './command.ts';
export { TOOLS, TOOL_NAMES, ToolName, isToolName, pathFields, targetOf, toolOf } from './tools.ts';
export type { ToolDescriptor } from './tools.ts';
export { TurnParser, parseAll } from './turn-parser.ts';
export type { ParserOutput, StreamName, ParserOptions } from './turn-parser.ts';
export { PRECEDING_TEXT_BYTES, precedingText, tailUtf8 } from './preceding-text.ts';
/** A tag's limits: what a command from the model can carry (an operator's edit is held to the same). */
export { OPENING_TAG_LIMIT, DEFAULT_BODY_LIMIT } from './tag.ts';
