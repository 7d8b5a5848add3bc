// The evaluation budget (issue 18): a script within the size bounds of
// shell-split.ts can still make the engine work hard — a wrapper read by
// guessing copies its long argv once per guess, a path argument is resolved
// against every directory a `cd` may have reached, an explanation judges
// each part again. Work is counted in steps (words copied, characters
// re-read, file operations resolved and matched), not time, so the same
// script gets the same decision on every machine and in the CLI. A script
// whose reading runs out of steps is complex: the policy's default, plus
// every restriction read before the budget ran out — never an allow.
export const MAX_POLICY_STEPS = 50_000;
export const BUDGET_REASON = `policy evaluation budget exceeded (${MAX_POLICY_STEPS.toLocaleString('en-US')} steps); split the script or write it to a file`;

export type Budget = { left: number; over?: string };

export function newBudget(steps = MAX_POLICY_STEPS): Budget {
  return { left: steps };
}

/** Takes `n` steps; false, with the budget marked over, when they are not left. */
export function spend(b: Budget, n: number): boolean {
  b.left -= n;
  if (b.left >= 0) return true;
  b.left = 0;
  b.over ??= BUDGET_REASON;
  return false;
}

/** Steps charged for one file operation: resolving it, and matching it against the path rules later. */
export const FILE_OP_STEPS = 16;
