// Worst cases of policy evaluation (issue 18), next to the largest ordinary
// script within the size bounds measured in the same run, and next to what
// the audit measured before the step budget (59 ms for a decision, 195 ms
// for explainBash). Target, judged here: a hostile script costs at most 3×
// the ordinary one, decision and explanation alike.
import { evaluate, explainBash, loadPolicyDir } from '../../services/policy/index.ts';

const words = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`).join(' ');
const BASELINE = `${'ls;'.repeat(250)}echo ${'a '.repeat(15 * 1024)}`;
const HOSTILE: [string, string][] = [
  ['strace + 16,000-word argv (guessed 32 ways)', `strace ${'a '.repeat(16_000)}`],
  ['250 × strace with 60 words', Array.from({ length: 250 }, () => `strace ${'a '.repeat(60)}`).join(';')],
  ['rm of 3,000 paths after 4 cds (16 cwds)', `cd a; cd b; cd c; cd d; rm ${words(3000)}`],
];
export const PREVIOUS = { decisionMs: 59, explainMs: 195 };
const MAX_RATIO = 3;

/** Median of 15 runs after 3 warm-up runs, in ms. */
function median(f: () => unknown): number {
  for (let k = 0; k < 3; k++) f();
  const t: number[] = [];
  for (let k = 0; k < 15; k++) {
    const t0 = process.hrtime.bigint();
    f();
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return t.sort((a, b) => a - b)[7]!;
}

/** Prints the table; returns false when a target is missed. */
export async function worstCases(out: (s: string) => void, policyDir: string): Promise<boolean> {
  const layers = (await loadPolicyDir(policyDir)).layers();
  const cmd = (c: string) => ({ id: '1', tool: 'bash' as const, cmd: c, need_result: false });
  const base = { d: median(() => evaluate(layers, cmd(BASELINE))), x: median(() => explainBash(layers, BASELINE)) };
  out('');
  out(`Worst cases (shipped policies; previous worst measured by the audit before the step budget: ${PREVIOUS.decisionMs} ms per decision, ${PREVIOUS.explainMs} ms per explainBash). Target: ≤ ${MAX_RATIO}× the largest ordinary script.`);
  out('');
  out('| script | decision | decision ms | × ordinary | explainBash ms | × ordinary | target |');
  out('|---|---|---:|---:|---:|---:|---|');
  out(`| largest ordinary script (250 commands + 15,360 words) | ${evaluate(layers, cmd(BASELINE)).decision} | ${base.d.toFixed(2)} | 1.0 | ${base.x.toFixed(2)} | 1.0 | — |`);
  let ok = true;
  for (const [name, script] of HOSTILE) {
    const d = median(() => evaluate(layers, cmd(script)));
    const x = median(() => explainBash(layers, script));
    const met = d <= MAX_RATIO * base.d && x <= MAX_RATIO * base.x;
    ok &&= met;
    out(`| ${name} | ${evaluate(layers, cmd(script)).decision} | ${d.toFixed(2)} | ${(d / base.d).toFixed(1)} | ${x.toFixed(2)} | ${(x / base.x).toFixed(1)} | ${met ? 'met' : 'NOT met'} |`);
  }
  return ok;
}
