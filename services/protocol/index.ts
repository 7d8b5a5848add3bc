// Public surface of the tf-* protocol core. Pure: no I/O anywhere under protocol/.
export * from './command.ts';
export * from './tools.ts';
export { TurnParser, parseAll } from './turn-parser.ts';
export type { ParserOutput, StreamName, ParserOptions } from './turn-parser.ts';
