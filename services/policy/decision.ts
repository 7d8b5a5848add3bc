// The three decisions and their order. Strictness is a total order so every
// combination (parts of a script, rules of all layers, two files of one layer
// setting the same default) is resolved by one rule: the strictest wins.
import { z } from 'zod';

export const DECISIONS = ['allow', 'prompt', 'forbid'] as const;
/** The one schema of a decision: policy files, the ledger, events and the API use it. */
export const Decision = z.enum(DECISIONS);
export type Decision = z.infer<typeof Decision>;

const RANK: Record<Decision, number> = { allow: 0, prompt: 1, forbid: 2 };

export function rank(d: Decision): number {
  return RANK[d];
}

export function stricter(a: Decision, b: Decision): Decision {
  return RANK[b] > RANK[a] ? b : a;
}

/** Strictest of a list; `undefined` for an empty list so callers must pick a fallback. */
export function strictest(ds: Iterable<Decision>): Decision | undefined {
  let out: Decision | undefined;
  for (const d of ds) out = out === undefined ? d : stricter(out, d);
  return out;
}
