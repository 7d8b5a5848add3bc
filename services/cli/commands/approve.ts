// `thinkflow approve TOKEN [--session [--prefix] | --edit-cmd CMD | --edit-content-file F]` and
// `thinkflow reject TOKEN [--reason "…"]`: one answer to a pending approval
// (POST /v1/approvals/:token; an edit is `approve_edited`). Exit 0
// answered, 1 the answer failed (already answered or expired, unknown token,
// API refused or unreachable), 2 bad arguments.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ApprovalAnswer, ApprovalEdit } from '../../pipeline/index.ts';
import { ApiClient, ApiError, CliError, CONNECTION_OPTIONS, oneLine, resolveConnection, UsageError } from '../api-client.ts';

const USAGE = {
  approve: 'usage: thinkflow approve TOKEN [--session [--prefix] | --edit-cmd CMD | --edit-content-file F] [--url URL] [--key KEY]\n'
    + '  (--session: grant this exact command for the rest of the session; --prefix: the wider rule-prefix grant the approval offers;\n'
    + '   --edit-cmd: run CMD instead of the asked bash command; --edit-content-file: write F\'s content instead of the asked write/append)\n',
  reject: 'usage: thinkflow reject TOKEN [--reason "…"] [--url URL] [--key KEY]\n',
};

type Verb = keyof typeof USAGE;

async function answer(verb: Verb, args: string[]): Promise<number> {
  let client: ApiClient;
  let token: string;
  let decision: ApprovalAnswer;
  let reason: string | undefined;
  let prefix = false;
  let edit: ApprovalEdit | undefined;
  try {
    const options = verb === 'approve'
      ? { ...CONNECTION_OPTIONS, ...EDIT_OPTIONS, session: { type: 'boolean', default: false }, prefix: { type: 'boolean', default: false } } as const
      : { ...CONNECTION_OPTIONS, reason: { type: 'string' } } as const;
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options });
    if (positionals.length !== 1 || positionals[0] === '') throw new UsageError(positionals.length === 0 ? 'a TOKEN is required' : `one TOKEN only; unexpected '${positionals[1]}'`);
    token = positionals[0]!;
    decision = verb === 'reject' ? 'reject' : (values as { session?: boolean }).session ? 'approve_for_session' : 'approve';
    reason = (values as { reason?: string }).reason;
    prefix = Boolean((values as { prefix?: boolean }).prefix);
    if (prefix && decision !== 'approve_for_session') throw new UsageError('--prefix goes with --session');
    edit = editOf(values as { 'edit-cmd'?: string; 'edit-content-file'?: string });
    if (edit && decision !== 'approve') throw new UsageError('--edit-cmd / --edit-content-file do not go with --session');
    if (edit) decision = 'approve_edited';
    client = new ApiClient(resolveConnection(values));
  } catch (err) {
    process.stderr.write(`thinkflow ${verb}: ${(err as Error).message}\n${USAGE[verb]}`);
    return 2;
  }
  try {
    const { approval: a } = await client.answerApproval(token, decision, reason, prefix ? 'prefix' : undefined, edit);
    const what = a ? ` (job ${a.job_id ?? '-'}, command ${a.command_id}: ${a.tool} ${oneLine(a.target, 60)})` : '';
    const done = ({
      approve: 'approved', approve_for_session: 'approved for the rest of the session', approve_edited: 'approved as edited', reject: 'rejected',
    } satisfies Record<ApprovalAnswer, string>)[decision];
    process.stdout.write(`${token}: ${done}${what}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ApiError && err.status === 409) {
      const d = (err.details ?? {}) as { status?: string; decided_by?: string | null };
      const state = d.status ? ` (${d.status}${d.decided_by ? ` by ${d.decided_by}` : ''})` : '';
      process.stderr.write(`thinkflow ${verb}: ${token}: already answered or expired${state}\n`);
      return 1;
    }
    if (err instanceof ApiError && err.status === 400 && (err.code === 'edit_forbidden' || err.code === 'invalid_body')) {
      process.stderr.write(`thinkflow ${verb}: ${token}: ${err.code}: ${err.apiMessage}\n`);
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

const EDIT_OPTIONS = { 'edit-cmd': { type: 'string' }, 'edit-content-file': { type: 'string' } } as const;

/** The edit of `--edit-cmd` / `--edit-content-file` (read as UTF-8), or undefined when neither is given. */
function editOf(values: { 'edit-cmd'?: string; 'edit-content-file'?: string }): ApprovalEdit | undefined {
  const cmd = values['edit-cmd'];
  const file = values['edit-content-file'];
  if (cmd !== undefined && file !== undefined) throw new UsageError('--edit-cmd (bash) or --edit-content-file (write, append), not both');
  if (cmd !== undefined) return { cmd };
  if (file === undefined) return undefined;
  try {
    return { content: readFileSync(file, 'utf8') };
  } catch (err) {
    throw new UsageError(`cannot read --edit-content-file ${file}: ${(err as Error).message}`);
  }
}

export const approveMain = (args: string[]): Promise<number> => answer('approve', args);
export const rejectMain = (args: string[]): Promise<number> => answer('reject', args);
