// Policy evaluation throughput: a 200-rule policy on a 5-part compound
// command, next to a 1-rule policy on a single command measured in the same
// run. Target: ≥ 50 000 evaluations/s for the 200-rule case. Then the worst
// cases against the step budget (worst-cases.ts).
//
//   npm run bench:policy                 # print the table
//   npm run bench:policy -- --write      # also replace the "## Policy" section of bench/RESULTS.md
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import type { Command } from '../../services/protocol/index.ts';
import { evaluate, parsePolicyDocument, PolicyLayers, type PolicyFile } from '../../services/policy/index.ts';
import { worstCases } from './worst-cases.ts';

const TARGET = 50_000;
const PROGRAMS = [
  'git', 'npm', 'node', 'python3', 'make', 'ls', 'cat', 'grep', 'find', 'tee', 'curl', 'wget', 'rm', 'cp', 'mv',
  'docker', 'kubectl', 'terraform', 'pip', 'cargo', 'go', 'java', 'tar', 'sed', 'awk', 'jq', 'ssh', 'sudo', 'apt-get', 'yarn',
];
const SUBS = ['status', 'diff', 'log', 'run', 'install', 'build', 'test', 'push', 'apply', 'get', 'add', 'show'];
const DECISIONS = ['allow', 'prompt', 'forbid'] as const;

/** 200 rules: 170 bash rules over 30 programs (alternatives, "*", except), 10 "*"-first, 20 path rules. */
function bigPolicy(): string {
  const rules: string[] = [];
  for (let k = 0; k < 170; k++) {
    const prog = PROGRAMS[k % PROGRAMS.length]!;
    const alt = PROGRAMS[(k * 7 + 3) % PROGRAMS.length]!;
    const sub = SUBS[k % SUBS.length]!;
    const sub2 = SUBS[(k + 5) % SUBS.length]!;
    const first = k % 4 === 0 ? `["${prog}", "${alt}"]` : `"${prog}"`;
    const rest = k % 3 === 0 ? `, ["${sub}", "${sub2}"]` : k % 3 === 1 ? `, "*", "--flag${k}"` : `, "${sub}"`;
    const except = k % 10 === 0 ? `\n    except: [["${prog}", "${sub2}", "--dry-run"]]` : '';
    rules.push(`  - id: r${k}\n    tool: bash\n    command: [${first}${rest}]\n    decision: ${DECISIONS[k % 3]}\n    justification: rule ${k}${except}`);
  }
  for (let k = 0; k < 10; k++) {
    rules.push(`  - id: w${k}\n    tool: bash\n    command: ["*", "--wild${k}"]\n    decision: prompt\n    justification: wildcard ${k}`);
  }
  for (let k = 0; k < 20; k++) {
    rules.push(`  - id: f${k}\n    tool: [write, edit, copy]\n    path: "dir${k}/**/*.ts"\n    decision: ${DECISIONS[k % 3]}\n    justification: path ${k}`);
  }
  return `version: 1\ndefaults:\n  bash: prompt\nrules:\n${rules.join('\n')}\n`;
}

const ONE_RULE = 'version: 1\nrules:\n  - {id: ls, tool: bash, command: [ls], decision: allow, justification: one}\n';

function layersOf(text: string): PolicyLayers {
  const file: PolicyFile = parsePolicyDocument('bench.yaml', text, 'global');
  return new PolicyLayers([file], [], []);
}

const cmd = (c: string): Command => ({ id: '1', tool: 'bash', cmd: c, need_result: false });

type Case = { name: string; rules: number; layers: PolicyLayers; command: Command };

/** Median of 5 timed rounds of ~300 ms each, after a warm-up. */
function measure(c: Case): { perSec: number; decision: string } {
  let decision = '';
  for (let k = 0; k < 20_000; k++) decision = evaluate(c.layers, c.command).decision;
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    while (elapsed < 300_000_000n) {
      for (let k = 0; k < 1000; k++) evaluate(c.layers, c.command);
      n += 1000;
      elapsed = process.hrtime.bigint() - start;
    }
    rounds.push(n / (Number(elapsed) / 1e9));
  }
  rounds.sort((a, b) => a - b);
  return { perSec: rounds[2]!, decision };
}

const big = layersOf(bigPolicy());
const one = layersOf(ONE_RULE);
const COMPOUND = 'git status && npm run build | tee build.log; ls -la src && cat README.md';
const REDIRECTED = 'git status > s.txt 2>&1 && npm run build >> build.log; ls -la src < /dev/null && cat README.md 2>/dev/null';
const patho = layersOf('version: 1\nrules:\n  - {id: p, tool: write, path: "*a*a*a*a*a*a*a*c", decision: forbid}\n');
const cases: Case[] = [
  { name: 'baseline: 1 rule, single command', rules: one.rules.length, layers: one, command: cmd('ls -la') },
  { name: '1 rule, 5-part compound command', rules: one.rules.length, layers: one, command: cmd(COMPOUND) },
  { name: '200 rules, single command', rules: big.rules.length, layers: big, command: cmd('git status') },
  { name: '200 rules, 5-part compound command', rules: big.rules.length, layers: big, command: cmd(COMPOUND) },
  { name: '200 rules, complex script', rules: big.rules.length, layers: big, command: cmd('for f in $(ls); do git status $f; done') },
  { name: '200 rules, write (glob rules)', rules: big.rules.length, layers: big, command: { id: '1', tool: 'write', path: 'dir7/a/b/c.ts', need_result: false } },
  // POLICY.md §7: redirection targets are checked as writes/reads, and globs match in linear time.
  { name: '200 rules, 5-part command with redirections', rules: big.rules.length, layers: big, command: cmd(REDIRECTED) },
  { name: 'glob `*a*a*a*a*a*a*a*c` vs a 4 KiB path', rules: patho.rules.length, layers: patho, command: { id: '1', tool: 'write', path: 'a'.repeat(4096), need_result: false } },
];

const lines: string[] = [];
const out = (s: string): void => {
  lines.push(s);
  process.stdout.write(s + '\n');
};
out(`machine: node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}, ${new Date().toISOString()}; ` +
  'median of 5 rounds of ~300 ms after 20 000 warm-up calls, run through tsx like the CLI');
out('');
out(`compound command: \`${COMPOUND}\``);
out('');
out('| case | rules | decision | evaluations/s |');
out('|---|---:|---|---:|');
const results = cases.map((c) => ({ c, ...measure(c) }));
for (const { c, perSec, decision } of results) {
  out(`| ${c.name} | ${c.rules} | ${decision} | ${Math.round(perSec).toLocaleString('en-US')} |`);
}
const headline = results[3]!.perSec;
out('');
out(`200 rules × 5-part command: ${Math.round(headline).toLocaleString('en-US')}/s (${(1e6 / headline).toFixed(2)} µs each), ` +
  `${(results[0]!.perSec / headline).toFixed(1)}× slower than the baseline; target ≥ ${TARGET.toLocaleString('en-US')}/s: ${headline >= TARGET ? 'met' : 'NOT met'}`);

const worstMet = await worstCases(out, fileURLToPath(new URL('../../policies', import.meta.url)));

if (process.argv.includes('--write')) {
  const path = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
  const old = await readFile(path, 'utf8').catch(() => '# Benchmarks\n');
  const section = `## Policy\n\nCommand: \`npm run bench:policy\` (\`tsx bench/policy/run.ts\`)\n\n${lines.join('\n')}\n`;
  // Replace only our own section; other sections belong to other benchmarks.
  const re = /## Policy\n[\s\S]*?(?=\n## |$)/;
  const next = re.test(old) ? old.replace(re, section) : `${old.trimEnd()}\n\n${section}`;
  await writeFile(path, next);
}
if (headline < TARGET || !worstMet) process.exitCode = 1;
