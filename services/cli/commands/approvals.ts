// `thinkflow approvals [--json]`: the pending approvals (GET
// /v1/approvals?status=pending) as a table an operator can act on, or the raw
// answer with --json. Exit 0 listed, 1 the API refused or is unreachable, 2 bad arguments.
import { parseArgs } from 'node:util';
import type { PendingApproval } from '../../api/index.ts';
import { ApiClient, CliError, CONNECTION_OPTIONS, oneLine, resolveConnection, UsageError } from '../api-client.ts';

const USAGE = 'usage: thinkflow approvals [--json] [--url URL] [--key KEY]\n';

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

function table(rows: PendingApproval[]): string {
  const head = ['TOKEN', 'JOB', 'CMD', 'TOOL', 'TARGET', 'MATCHED RULES', 'EXPIRES IN'];
  // Tokens stay whole: the operator copies them into `thinkflow approve`.
  const body = rows.map((a) => [
    a.token, a.job_id ?? '-', a.command_id, a.tool, oneLine(a.target, 50),
    a.matched_rules.map((r) => r.id).join(',') || '-', expiresIn(a.expires_at),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  return [head, ...body].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export async function approvalsMain(args: string[]): Promise<number> {
  let client: ApiClient;
  let json: boolean;
  try {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...CONNECTION_OPTIONS, json: { type: 'boolean', default: false } } });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    client = new ApiClient(resolveConnection(values));
    json = values.json;
  } catch (err) {
    process.stderr.write(`thinkflow approvals: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  try {
    const answer = await client.pendingApprovals();
    if (json) process.stdout.write(`${JSON.stringify(answer)}\n`);
    else if (answer.approvals.length === 0) process.stdout.write('no pending approvals\n');
    else process.stdout.write(table(answer.approvals));
    return 0;
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    process.stderr.write(`thinkflow approvals: ${err.message}\n`);
    return 1;
  }
}
