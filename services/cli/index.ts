// The CLI's door: the subcommand table and its runner (services/main adds `serve`).
export { CLIENT_SUBCOMMANDS, loadClient, main } from './main.ts';
export type { Subcommands } from './main.ts';
export type { ApiClient } from './api-client.ts';
