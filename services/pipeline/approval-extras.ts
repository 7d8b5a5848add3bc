import { withIds } from '../log/index.ts';
import type { Command } from '../protocol/index.ts';
import type { ApprovalContext, IndirectFile } from './approval-context.ts';
import { readIndirect, type IndirectPorts } from './indirect-file.ts';
import type { Ledger } from './ledger.ts';
import type { LedgerRecord } from './ledger-record.ts';

// What the worker adds to an approval it requests (approval-context.ts): the
// preceding text kept with the record, and the file a bash command runs. The
// job's task and metadata are not the worker's to read: the API adds them.

export type ApprovalExtras = { context: ApprovalContext; indirect: IndirectFile | null };

export async function approvalExtras(p: IndirectPorts & { ledger: Pick<Ledger, 'precedingText'> }, rec: LedgerRecord, command: Command): Promise<ApprovalExtras> {
  const [preceding, indirect] = await Promise.all([
    p.ledger.precedingText(rec.session, rec.index),
    command.tool === 'bash' && command.cmd
      ? readIndirect(p, rec, command.cmd).catch((err: unknown) => {
        // The operator still decides, on the command alone: a sandbox that cannot be read must not hold the request up.
        withIds({ session_id: rec.session, command_id: rec.id }).warn({ err }, 'approval: the file the command runs could not be read; the card shows the command alone');
        return null;
      })
      : null,
  ]);
  return { context: { preceding_text: preceding }, indirect };
}
