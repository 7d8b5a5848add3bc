// `thinkflow approvals [--status pending|decided|expired|all] [--json]`: the
// approvals (GET /v1/approvals?status=…) as a table: pending ones to act on,
// answered ones with who decided, when and what the command did; or the raw
// answer with --json. Exit 0 listed, 1 the API refused or is unreachable, 2 bad arguments.
import { parseArgs } from 'node:util';
import type { DecidedApproval, ListedApproval, PendingApproval } from '../../api/index.ts';
import type { ApprovalListStatus } from '../../pipeline/index.ts';
import { ApiClient, CliError, CONNECTION_OPTIONS, oneLine, resolveConnection, UsageError } from '../api-client.ts';

const USAGE = 'usage: thinkflow approvals [--status pending|decided|expired|all] [--json] [--url URL] [--key KEY]\n';

/** "14m 05s" until expiry; the server decides, this is only a hint for the operator. */
export function expiresIn(expiresAt: string, now = Date.now()): string {
  const ms = Date.parse(expiresAt) - now;
  if (Number.isNaN(ms)) return '?';
  if (ms <= 0) return 'expired';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/** What the command did, in one cell: `succeeded (exit 0)`, `failed: <error>`; `-` before it ran or when it never will. */
export function outcomeText(a: DecidedApproval): string {
  const o = a.outcome;
  if (!o) return '-';
  return `${o.status}${o.exit_code !== undefined ? ` (exit ${o.exit_code})` : ''}${o.error ? `: ${oneLine(o.error, 60)}` : ''}`;
}

/** The listing's statuses (the API checks them too; asked here first for a usage error, exit 2). */
const STATUSES = ['pending', 'decided', 'expired', 'all'] as const satisfies readonly ApprovalListStatus[];

function pendingRow(a: PendingApproval): string[] {
  return [a.token, a.job_id ?? '-', a.command_id, a.tool, oneLine(a.target, 50), a.matched_rules.map((r) => r.id).join(',') || '-', expiresIn(a.expires_at)];
}

function table(rows: ListedApproval[], status: ApprovalListStatus): string {
  const pendingOnly = status === 'pending';
  const head = pendingOnly
    ? ['TOKEN', 'JOB', 'CMD', 'TOOL', 'TARGET', 'MATCHED RULES', 'EXPIRES IN']
    : ['TOKEN', 'JOB', 'CMD', 'TOOL', 'TARGET', 'STATUS', 'BY', 'AT', 'OUTCOME'];
  // Tokens stay whole: the operator copies them into `thinkflow approve`.
  const body = rows.map((a) => (pendingOnly ? pendingRow(a) : [
    a.token, a.job_id ?? '-', a.command_id, a.tool, oneLine(a.target, 50), a.status,
    a.status === 'pending' ? '-' : a.decided_by, a.status === 'pending' ? '-' : a.decided_at,
    a.status === 'pending' ? `expires in ${expiresIn(a.expires_at)}` : outcomeText(a),
  ]));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  return [head, ...body].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export async function approvalsMain(args: string[]): Promise<number> {
  let client: ApiClient;
  let json: boolean;
  let status: ApprovalListStatus;
  try {
    const { values, positionals } = parseArgs({
      args, allowPositionals: true, options: { ...CONNECTION_OPTIONS, json: { type: 'boolean', default: false }, status: { type: 'string', default: 'pending' } },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    status = values.status as ApprovalListStatus;
    if (!STATUSES.includes(status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}, got '${values.status}'`);
    client = new ApiClient(resolveConnection(values));
    json = values.json;
  } catch (err) {
    process.stderr.write(`thinkflow approvals: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  try {
    const answer = await client.approvals(status);
    if (json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else if (answer.approvals.length === 0) process.stdout.write(`no ${status === 'all' ? '' : `${status} `}approvals\n`);
    else process.stdout.write(table(answer.approvals, status));
    return 0;
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`thinkflow approvals: ${err.message}\n`);
    return 1;
  }
}
