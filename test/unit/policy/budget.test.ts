// Issue 18: the worst case of policy evaluation is bounded by a step budget
// (services/policy/budget.ts). On main before this change, the guessed
// wrapper below took ~17× the largest ordinary script and its explanation
// ~6×; now an over-budget script is complex (the policy's default) at about
// the cost of reading the script once or twice.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUDGET_REASON, evaluate, explainBash, loadPolicyDir, MAX_POLICY_STEPS, type PolicyLayers } from '../../../services/policy/index.ts';
import { bash } from './helpers.ts';

const DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
let layers: PolicyLayers;
beforeAll(async () => {
  layers = (await loadPolicyDir(DIR)).layers();
});

const words = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`).join(' ');
/** The largest ordinary script within the size bounds: what any evaluation may cost. */
const BASELINE = `${'ls;'.repeat(250)}echo ${'a '.repeat(15 * 1024)}`;
const HOSTILE: Record<string, string> = {
  'a wrapper read by guessing, over a 16,000-word argv': `strace ${'a '.repeat(16_000)}`,
  '250 guessed wrappers of 60 words': Array.from({ length: 250 }, () => `strace ${'a '.repeat(60)}`).join(';'),
  '3,000 path arguments against 16 possible working directories': `cd a; cd b; cd c; cd d; rm ${words(3000)}`,
};

/** Best of seven runs of each, interleaved so that a busy spell of the shared machine hits both sides alike. */
function bestOfBoth(base: () => unknown, hostile: () => unknown): { base: number; hostile: number } {
  const out = { base: Infinity, hostile: Infinity };
  for (let k = 0; k < 7; k++) {
    let t0 = performance.now();
    base();
    out.base = Math.min(out.base, performance.now() - t0);
    t0 = performance.now();
    hostile();
    out.hostile = Math.min(out.hostile, performance.now() - t0);
  }
  return out;
}

describe('the policy evaluation budget', () => {
  it('is 50,000 steps, and the reason says so', () => {
    expect(MAX_POLICY_STEPS).toBe(50_000);
    expect(BUDGET_REASON).toMatch(/budget exceeded \(50,000 steps\)/);
  });

  it.each(Object.entries(HOSTILE))('%s: complex (the default, prompt), decided at the cost of an ordinary script', (_, cmd) => {
    const e = evaluate(layers, bash(cmd));
    expect(e.decision).toBe('prompt');
    expect(e.reason).toMatch(/^complex script \(/);
    const t = bestOfBoth(() => evaluate(layers, bash(BASELINE)), () => evaluate(layers, bash(cmd)));
    // Before the budget the first row was ~17×.
    expect(t.hostile).toBeLessThan(3 * t.base + 5);
  });

  it('path arguments past the budget name the budget as the reason', () => {
    expect(evaluate(layers, bash(HOSTILE['3,000 path arguments against 16 possible working directories']!)).reason).toContain(BUDGET_REASON);
  });

  it('a restriction read before the budget ran out still holds: never an allow, and a forbid stays a forbid', () => {
    expect(evaluate(layers, bash(`curl x; strace ${'a '.repeat(16_000)}`)).decision).toBe('forbid');
    expect(evaluate(layers, bash(`rm -rf .git; cd a; cd b; cd c; cd d; rm ${words(3000)}`)).decision).toBe('forbid');
  });

  it('explainBash is bounded too: past the budget it is the whole script as one segment', () => {
    for (const cmd of [HOSTILE['a wrapper read by guessing, over a 16,000-word argv']!, HOSTILE['250 guessed wrappers of 60 words']!]) {
      const x = explainBash(layers, cmd);
      expect(x.complex).toBe(BUDGET_REASON);
      expect(x.segments).toHaveLength(1);
      expect(x.segments[0]).toMatchObject({ text: cmd, decision: 'prompt' });
      const t = bestOfBoth(() => explainBash(layers, BASELINE), () => explainBash(layers, cmd));
      // Before the budget: ~6× for the first script, ~4× for the second.
      expect(t.hostile).toBeLessThan(3 * t.base + 5);
    }
  });

  it('an ordinary script is explained part by part, within the budget', () => {
    const x = explainBash(layers, BASELINE);
    expect(x.complex).toBeNull();
    expect(x.segments).toHaveLength(251);
  });
});
