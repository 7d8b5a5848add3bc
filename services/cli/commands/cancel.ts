// `thinkflow cancel JOB_ID`: stops a job (POST /v1/jobs/:id/cancel) — the
// model stream ends, queued commands are skipped, pending approvals rejected.
// Exit 0 when the job is (or already was) finished, 1 when the API refused or
// could not be reached, 2 for bad arguments.
import { parseArgs } from 'node:util';
import { ApiClient, ApiError, CliError, CONNECTION_OPTIONS, resolveConnection, UsageError } from '../api-client.ts';

const USAGE = 'usage: thinkflow cancel JOB_ID [--url URL] [--key KEY]\n';

export async function cancelMain(args: string[]): Promise<number> {
  let client: ApiClient;
  let jobId: string;
  try {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: CONNECTION_OPTIONS });
    if (positionals.length !== 1 || positionals[0] === '') throw new UsageError(positionals.length === 0 ? 'a JOB_ID is required' : `one JOB_ID only; unexpected '${positionals[1]}'`);
    jobId = positionals[0]!;
    client = new ApiClient(resolveConnection(values));
  } catch (err) {
    process.stderr.write(`thinkflow cancel: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  try {
    const job = await client.cancelJob(jobId);
    const final = job.status === 'succeeded' || job.status === 'failed' || job.status === 'cancelled';
    process.stdout.write(`${jobId}: ${final ? `already ${job.status}` : `cancel requested (was ${job.status})`}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      process.stderr.write(`thinkflow cancel: ${jobId}: no such job\n`);
      return 1;
    }
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`thinkflow cancel: ${err.message}\n`);
    return 1;
  }
}
