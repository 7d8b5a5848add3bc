import { diffLines } from 'diff';
import { describeGrant, type BashExplanation, type Grant } from '../policy/index.ts';
import type { Command } from '../protocol/index.ts';
import { targetOf, type ApprovalState, type LedgerRecord, type Pipeline, type PolicyGate } from '../pipeline/index.ts';

// An approval as a person deciding it needs to see it: what will run (the full
// command, write content, an edit's diff, a copy's source and destination,
// a bash script's segments with their own decisions), the grant that
// "approve for session" would give, in words, and the session's last ledger
// entries. Served on the operator approvals stream.

export type DiffLine = { op: ' ' | '-' | '+'; text: string };
export type RecentEntry = {
  index: number; id: string; tool: string; status: string; target: string;
  decided_by: string | null; decision: string | null;
};
export type ApprovalCard = Omit<ApprovalState, 'index'> & {
  index: number;
  /** the policy engine's own words for why this command needs a person (the deciding rule or default) */
  policy_reason: string | null;
  command: {
    path: string | null; dest: string | null; cmd: string | null; content: string | null; content_size: number | null;
    old_text: string | null; new_text: string | null;
  };
  diff: DiffLine[] | null;
  bash: BashExplanation | null;
  grant: { scope: Grant | null; words: string };
  recent: RecentEntry[];
};

const RECENT = 5;

/** old → new as whole lines (jsdiff), each marked kept, removed or added. */
export function lineDiff(oldText: string, newText: string): DiffLine[] {
  const out: DiffLine[] = [];
  for (const part of diffLines(oldText, newText)) {
    const op = part.added ? '+' : part.removed ? '-' : ' ';
    const lines = part.value.endsWith('\n') ? part.value.slice(0, -1).split('\n') : part.value.split('\n');
    for (const text of lines) out.push({ op, text });
  }
  return out;
}

export function recentOf(records: LedgerRecord[]): RecentEntry[] {
  return records.slice(-RECENT).map((r) => ({
    index: r.index, id: r.id, tool: r.tool, status: r.status, target: targetOf(r),
    decided_by: r.approval?.decided_by ?? null, decision: r.approval?.decision ?? null,
  }));
}

export type CardDeps = { pipeline: Pick<Pipeline, 'approvals' | 'ledger' | 'sessions'>; gate: Pick<PolicyGate, 'explainBash'> };

export async function approvalCard(deps: CardDeps, a: ApprovalState): Promise<ApprovalCard> {
  const p = deps.pipeline;
  const [record, grant, session, ledger] = await Promise.all([
    p.ledger.get(a.session_id, a.index), p.approvals.grantOf(a.token), p.sessions.get(a.session_id), p.ledger.tail(a.session_id, RECENT + 1),
  ]);
  const r = record;
  const command: Command = { id: a.command_id, tool: a.tool as Command['tool'], need_result: false, path: r?.path ?? undefined, dest: r?.dest ?? undefined, cmd: r?.cmd ?? undefined };
  let bash: BashExplanation | null = null;
  if (a.tool === 'bash' && r?.cmd && session) {
    // Segments are judged without grants: the card explains why the command stopped here.
    bash = deps.gate.explainBash(session, r.cmd, []);
  }
  return {
    ...a,
    policy_reason: r?.policy_reason ?? null,
    command: {
      path: r?.path ?? null, dest: r?.dest ?? null, cmd: r?.cmd ?? null, content: r?.content ?? null, content_size: r?.content_size ?? null,
      old_text: r?.old_text ?? null, new_text: r?.new_text ?? null,
    },
    diff: a.tool === 'edit' && r ? lineDiff(r.old_text ?? '', r.new_text ?? '') : null,
    bash,
    grant: { scope: grant[0] ?? null, words: grantWords(a, grant, command) },
    recent: recentOf(ledger.filter((x) => x.index !== a.index)),
  };
}

// The exact grants are what approve_for_session gives (POLICY.md §7), in words.
function grantWords(a: ApprovalState, grants: Grant[], command: Command): string {
  if (grants.length > 0) return grants.map((g) => describeGrant(g, command)).join('; ');
  const exact = a.grant_options?.find((o) => o.scope === 'exact')?.covers;
  return exact ?? 'no session grant is possible for this command: approve it once or reject it';
}
