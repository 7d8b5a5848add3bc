// Public surface of the tf-* protocol core: only what a file outside protocol/ imports.
// Pure: no I/O anywhere under protocol/.
export { Command, CommandFlow, ParseError } from './command.ts';
export { TOOLS, TOOL_NAMES, ToolName, isToolName, pathFields, targetOf, toolOf } from './tools.ts';
export type { ToolDescriptor } from './tools.ts';
export { TurnParser, parseAll } from './turn-parser.ts';
export type { ParserOutput, StreamName, ParserOptions } from './turn-parser.ts';
