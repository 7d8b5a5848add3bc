// The `thinkflow` command line: a table of subcommands, each loaded on demand so
// `thinkflow parse` does not pay for Redis, Docker or HTTP modules.
// `serve` is not in this table: starting the service is the composition
// root's (services/main), which adds it when it runs the CLI.
export type SubcommandMain = (args: string[]) => Promise<number>;
export type Subcommand = { summary: string; load: () => Promise<SubcommandMain> };
export type Subcommands = Record<string, Subcommand>;

/** The client and offline subcommands, in the order `thinkflow --help` lists them. */
export const CLIENT_SUBCOMMANDS: Subcommands = {
  parse: {
    summary: 'parse FILE [--chunk N] [--legacy-tags]   run the tf-* streaming parser offline',
    load: async () => (await import('./commands/parse.ts')).parseMain,
  },
  policy: {
    summary: 'policy check ...                          evaluate a command against policy files',
    load: async () => (await import('./commands/policy.ts')).policyMain,
  },
  submit: { summary: 'submit "TASK" [--approval ...] [--wait]   submit a job; --wait follows it', load: async () => (await import('./commands/submit.ts')).submitMain },
  approvals: { summary: 'approvals [--status S] [--json]           list approvals (pending; decided, expired, all)', load: async () => (await import('./commands/approvals.ts')).approvalsMain },
  approve: { summary: 'approve TOKEN [--session [--prefix]]      approve a pending command', load: async () => (await import('./commands/approve.ts')).approveMain },
  reject: { summary: 'reject TOKEN [--reason "..."]             reject a pending command', load: async () => (await import('./commands/approve.ts')).rejectMain },
  cancel: { summary: 'cancel JOB_ID                             stop a job: the model, the queue, its approvals', load: async () => (await import('./commands/cancel.ts')).cancelMain },
  say: { summary: 'say JOB_ID "TEXT" [--interrupt]           steer a running job (--interrupt: stop its stream now)', load: async () => (await import('./commands/steer.ts')).sayMain },
  pause: { summary: 'pause JOB_ID                              no new model call or command starts until resume', load: async () => (await import('./commands/steer.ts')).pauseMain },
  resume: { summary: 'resume JOB_ID                             let a paused job go on', load: async () => (await import('./commands/steer.ts')).resumeMain },
};

/**
 * The REST client and `submit --wait`'s follower, for a script that drives a
 * job itself (scripts/demo.ts); loaded on demand like the subcommands, so
 * importing the CLI's door costs no HTTP client or logger.
 */
export async function loadClient() {
  const [{ ApiClient, resolveConnection }, { follow }] = await Promise.all([import('./api-client.ts'), import('./commands/submit.ts')]);
  return { ApiClient, resolveConnection, follow };
}

function usage(subcommands: Subcommands): string {
  const lines = Object.entries(subcommands).map(([, s]) => `  thinkflow ${s.summary}`);
  return ['usage:', ...lines].join('\n') + '\n';
}

export async function main(argv: string[], subcommands: Subcommands = CLIENT_SUBCOMMANDS): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage(subcommands));
    return name ? 0 : 2;
  }
  const entry = subcommands[name];
  if (!entry) {
    process.stderr.write(`thinkflow: unknown command '${name}'\n${usage(subcommands)}`);
    return 2;
  }
  const run = await entry.load();
  return run(rest);
}
