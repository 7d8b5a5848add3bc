// `thinkflow say JOB_ID "TEXT" [--interrupt]`, `thinkflow pause JOB_ID`,
// `thinkflow resume JOB_ID`: steering and pause/resume of a running job
// (POST /v1/jobs/:id/messages, /pause, /resume). Exit 0 when the API took the
// request, 1 when it refused (no such job, finished, not paused, too many
// messages) or could not be reached, 2 for bad arguments.
import { parseArgs } from 'node:util';
import { ApiClient, ApiError, CliError, CONNECTION_OPTIONS, resolveConnection, UsageError } from '../api-client.ts';

type Action = { name: string; usage: string; texts: number; options?: Record<string, { type: 'boolean' }> };

const SAY: Action = { name: 'say', usage: 'usage: thinkflow say JOB_ID "TEXT" [--interrupt] [--url URL] [--key KEY]\n', texts: 1, options: { interrupt: { type: 'boolean' } } };
const PAUSE: Action = { name: 'pause', usage: 'usage: thinkflow pause JOB_ID [--url URL] [--key KEY]\n', texts: 0 };
const RESUME: Action = { name: 'resume', usage: 'usage: thinkflow resume JOB_ID [--url URL] [--key KEY]\n', texts: 0 };

type Parsed = { client: ApiClient; jobId: string; text: string; flags: Record<string, unknown> };

function parse(action: Action, args: string[]): Parsed {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...CONNECTION_OPTIONS, ...action.options } });
  const want = 1 + action.texts;
  if (positionals.length === 0 || positionals[0] === '') throw new UsageError('a JOB_ID is required');
  if (action.texts > 0 && (positionals.length < want || positionals[1] === '')) throw new UsageError('the TEXT to send is required');
  if (positionals.length > want) throw new UsageError(`unexpected '${positionals[want]}'`);
  return { client: new ApiClient(resolveConnection(values)), jobId: positionals[0]!, text: positionals[1] ?? '', flags: values };
}

/** Runs one action with the shared argument and error handling of the three commands. */
async function run(action: Action, args: string[], call: (p: Parsed) => Promise<string>): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(action, args);
  } catch (err) {
    process.stderr.write(`thinkflow ${action.name}: ${(err as Error).message}\n${action.usage}`);
    return 2;
  }
  try {
    process.stdout.write(`${parsed.jobId}: ${await call(parsed)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      process.stderr.write(`thinkflow ${action.name}: ${parsed.jobId}: no such job\n`);
      return 1;
    }
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`thinkflow ${action.name}: ${parsed.jobId}: ${err.message}\n`);
    return 1;
  }
}

export function sayMain(args: string[]): Promise<number> {
  return run(SAY, args, async ({ client, jobId, text, flags }) => {
    const sent = await client.steerJob(jobId, text, flags.interrupt === true);
    return sent.interrupt ? `message ${sent.message_id} sent; the current model stream stops for it` : `message ${sent.message_id} joins the next model call`;
  });
}

export function pauseMain(args: string[]): Promise<number> {
  return run(PAUSE, args, async ({ client, jobId }) => {
    const job = await client.pauseJob(jobId);
    return job.status === 'paused' ? 'paused' : `pause requested (still ${job.status})`;
  });
}

export function resumeMain(args: string[]): Promise<number> {
  return run(RESUME, args, async ({ client, jobId }) => {
    const job = await client.resumeJob(jobId);
    return job.status === 'paused' ? 'resume requested (still paused)' : `resumed (${job.status})`;
  });
}
