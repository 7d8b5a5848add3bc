import type { ApprovalState } from '../pipeline/index.ts';
import type { CardView, CardViews, RecentEntry } from './card/card-views.ts';

// An approval as a person deciding it needs to see it: what will run (the full
// command, write content, an edit's diff, a copy's source and destination,
// a bash script's segments with their own decisions), the grant that
// "approve for session" would give, in words, and the session's last ledger
// entries. Served on the operator approvals stream. Everything a request can
// make expensive comes from `CardViews` (card/): bounded, computed once per
// approval, off the event loop when large; only `recent` is read each time.

export type { DiffLine, TextFacts } from './card/bounded-diff.mjs';
export type { RecentEntry } from './card/card-views.ts';
export type ApprovalCard = Omit<ApprovalState, 'index'> & { index: number } & CardView & {
  /** the policy engine's own words for why this command needs a person (the deciding rule or default) */
  policy_reason: string | null;
  recent: RecentEntry[];
};

export async function approvalCard(views: CardViews, a: ApprovalState): Promise<ApprovalCard> {
  const [view, recent] = await Promise.all([views.view(a), views.recent(a.session_id, a.index)]);
  return { ...a, ...view, recent };
}
