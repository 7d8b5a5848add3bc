import { CLIENT_SUBCOMMANDS, main as runCli, type Subcommands } from '../cli/index.ts';

// The `thinkflow` entry (bin/thinkflow.mjs): the CLI's subcommands plus
// `serve`, which starts this composition root. The table keeps the order
// `thinkflow --help` has always printed.

const { parse, policy, ...rest } = CLIENT_SUBCOMMANDS;

export const SUBCOMMANDS: Subcommands = {
  parse: parse!,
  policy: policy!,
  serve: { summary: 'serve [--role api|worker|all]              run the API and/or the worker', load: async () => (await import('./serve.ts')).serveMain },
  ...rest,
};

export function main(argv: string[]): Promise<number> {
  return runCli(argv, SUBCOMMANDS);
}
