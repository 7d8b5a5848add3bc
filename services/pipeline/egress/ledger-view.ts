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
  const byCommand = new Map<number, NetworkRecord[]>();
  const loose: NetworkRecord[] = [];
  const indexes = new Set(commands.map((c) => c.index));
  for (const n of network) {
    const at = n.command_index;
    if (at !== null && at !== undefined && indexes.has(at)) byCommand.set(at, [...(byCommand.get(at) ?? []), n]);
    else loose.push(n);
  }
  const out: LedgerEntry[] = [];
  let next = 0;
  for (const c of commands) {
    while (next < loose.length && loose[next]!.enqueued_at < c.enqueued_at) out.push(loose[next++]!);
    out.push(c, ...(byCommand.get(c.index) ?? []));
  }
  out.push(...loose.slice(next));
  return out;
}
