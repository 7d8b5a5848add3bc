// The three decisions and their order. Strictness is a total order so every
// combination (parts of a script, rules of all layers, two files of one layer
// setting the same default) is resolved by one rule: the strictest wins.
export const DECISIONS = ['allow', 'prompt', 'forbid'] as const;
export type Decision = (typeof DECISIONS)[number];

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
