import type { LedgerRecord } from '../ledger-record.ts';
import type { NetworkRecord } from './network-record.ts';

/** A ledger entry as GET …/ledger lists it: a command record, or a network record (`tool: "network"`). */
export type LedgerEntry = LedgerRecord | NetworkRecord;

/**
 * The session's ledger with its network records in place: each right after
 * the command that was running when it connected (in their own order), one
 * made between commands by its time among them.
 */
export function withNetworkRecords(commands: LedgerRecord[], network: NetworkRecord[]): LedgerEntry[] {
  if (network.length === 0) return commands;
  const byCommand = new Map<string, NetworkRecord[]>();
  const loose: NetworkRecord[] = [];
  const ids = new Set(commands.map((c) => c.id));
  for (const n of network) {
    if (n.command_id !== null && ids.has(n.command_id)) byCommand.set(n.command_id, [...(byCommand.get(n.command_id) ?? []), n]);
    else loose.push(n);
  }
  const out: LedgerEntry[] = [];
  let next = 0;
  for (const c of commands) {
    while (next < loose.length && loose[next]!.enqueued_at < c.enqueued_at) out.push(loose[next++]!);
    out.push(c, ...(byCommand.get(c.id) ?? []));
  }
  out.push(...loose.slice(next));
  return out;
}
