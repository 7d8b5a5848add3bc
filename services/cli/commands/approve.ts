// `thinkflow approve TOKEN [--session [--prefix]]` and `thinkflow reject TOKEN [--reason
// "…"]`: one answer to a pending approval (POST /v1/approvals/:token). Exit 0
// answered, 1 the answer failed (already answered or expired, unknown token,
// API refused or unreachable), 2 bad arguments.
import { parseArgs } from 'node:util';
import type { ApprovalAnswer } from '../../pipeline/index.ts';
import { ApiClient, ApiError, CliError, CONNECTION_OPTIONS, oneLine, resolveConnection, UsageError } from '../api-client.ts';

const USAGE = {
  approve: 'usage: thinkflow approve TOKEN [--session [--prefix]] [--url URL] [--key KEY]   (--session: grant this exact command for the rest of the session; --prefix: the wider rule-prefix grant the approval offers)\n',
  reject: 'usage: thinkflow reject TOKEN [--reason "…"] [--url URL] [--key KEY]\n',
};

type Verb = keyof typeof USAGE;

async function answer(verb: Verb, args: string[]): Promise<number> {
  let client: ApiClient;
  let token: string;
  let decision: ApprovalAnswer;
  let reason: string | undefined;
  let prefix = false;
  try {
    const options = verb === 'approve'
      ? { ...CONNECTION_OPTIONS, session: { type: 'boolean', default: false }, prefix: { type: 'boolean', default: false } } as const
      : { ...CONNECTION_OPTIONS, reason: { type: 'string' } } as const;
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options });
    if (positionals.length !== 1 || positionals[0] === '') throw new UsageError(positionals.length === 0 ? 'a TOKEN is required' : `one TOKEN only; unexpected '${positionals[1]}'`);
    token = positionals[0]!;
    decision = verb === 'reject' ? 'reject' : (values as { session?: boolean }).session ? 'approve_for_session' : 'approve';
    reason = (values as { reason?: string }).reason;
    prefix = Boolean((values as { prefix?: boolean }).prefix);
    if (prefix && decision !== 'approve_for_session') throw new UsageError('--prefix goes with --session');
    client = new ApiClient(resolveConnection(values));
  } catch (err) {
    process.stderr.write(`thinkflow ${verb}: ${(err as Error).message}\n${USAGE[verb]}`);
    return 2;
  }
  try {
    const { approval: a } = await client.answerApproval(token, decision, reason, prefix ? 'prefix' : undefined);
    const what = a ? ` (job ${a.job_id ?? '-'}, command ${a.command_id}: ${a.tool} ${oneLine(a.target, 60)})` : '';
    const done = ({ approve: 'approved', approve_for_session: 'approved for the rest of the session', reject: 'rejected' } satisfies Record<ApprovalAnswer, string>)[decision];
    process.stdout.write(`${token}: ${done}${what}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) {
      const d = (err.details ?? {}) as { status?: string; decided_by?: string | null };
      const state = d.status ? ` (${d.status}${d.decided_by ? ` by ${d.decided_by}` : ''})` : '';
      process.stderr.write(`thinkflow ${verb}: ${token}: already answered or expired${state}\n`);
      return 1;
    }
    if (err instanceof ApiError && err.status === 404) {
      process.stderr.write(`thinkflow ${verb}: ${token}: unknown token\n`);
      return 1;
    }
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`thinkflow ${verb}: ${err.message}\n`);
    return 1;
  }
}

export const approveMain = (args: string[]): Promise<number> => answer('approve', args);
export const rejectMain = (args: string[]): Promise<number> => answer('reject', args);
