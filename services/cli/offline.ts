// The offline subcommands (`parse`, `policy`): pure file-in, JSON-out tools
// with no Redis, Docker or HTTP. scripts/build-cli.mjs bundles this entry so
// they start fast; main.ts serves every subcommand through tsx.
import { parseMain } from './commands/parse.ts';
import { policyMain } from './commands/policy.ts';

export const OFFLINE_COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  parse: parseMain,
  policy: policyMain,
};
