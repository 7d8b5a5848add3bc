// The CLI's door: the subcommand table and its runner (services/main adds `serve`).
export { CLIENT_SUBCOMMANDS, main } from './main.ts';
export type { Subcommands } from './main.ts';
