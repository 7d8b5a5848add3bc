// POLICY.md §6 globs and §7 "Glob matching is linear": semantics, limits,
// and the pathological glob of issue 10 (it used to block the event loop for
// seconds through a backtracking regular expression).
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { evaluate, parsePolicyDocument } from '../../../services/policy/index.ts';
import { compileGlobMatcher } from '../../../services/policy/glob.ts';
import { file, layersFrom } from './helpers.ts';

const PATHOLOGICAL = '*a*a*a*a*a*a*a*c';

/** Best of three timings: one run can be descheduled on a shared machine; the bug took seconds every time. */
function bestMs(f: () => unknown): number {
  let best = Infinity;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    f();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

describe('glob matching', () => {
  it.each<[string, string, boolean]>([
    ['*.md', 'README.md', true],
    ['*.md', '.hidden.md', true], // dotfiles match
    ['*', 'a/b', false],
    ['a/**', 'a', true],
    ['a/**', 'a/b/c', true],
    ['a/**/b', 'a/b', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'a/x/y/c', false],
    ['**/x/**/y', 'p/x/q/x/r/y', true],
    ['a**b', 'axxb', true], // `**` inside a segment is `*`
    ['a**b', 'ax/xb', false],
    ['[ab].txt', 'b.txt', true],
    ['[!ab].txt', 'b.txt', false],
    ['[a-c]?.txt', 'cz.txt', true],
    ['{src,lib}/*.ts', 'lib/x.ts', true],
    ['{src,lib}/*.ts', 'test/x.ts', false],
    ['a/{b,c{d,e}}', 'a/ce', true],
    ['\\*.txt', '*.txt', true],
    ['\\*.txt', 'a.txt', false],
    ['[unclosed', '[unclosed', true],
    ['Src/*.ts', 'src/a.ts', false], // case-sensitive
  ])('%s vs %s → %s', (glob, path, hit) => {
    expect(compileGlobMatcher(glob)(path)).toBe(hit);
  });

  it('decides the pathological glob against a 4 KiB path in under 10 ms', () => {
    const test = compileGlobMatcher(PATHOLOGICAL);
    for (const path of ['a'.repeat(4096), `${'a'.repeat(4095)}b`, `${'ab'.repeat(2047)}ac`, `x/${'a'.repeat(4094)}`]) {
      expect(test(path)).toBe(path.endsWith('c') && !path.includes('/'));
      expect(bestMs(() => test(path))).toBeLessThan(10);
    }
  });

  it('loads a policy with the pathological glob and a 4 KiB not_match example, and evaluates, within milliseconds', () => {
    const example = 'a'.repeat(4096);
    const text = `version: 1\nrules:\n  - {id: p, tool: write, path: "${PATHOLOGICAL}", decision: forbid, examples: {not_match: ["${example}"], match: ["aaaaaaac"]}}\n`;
    expect(bestMs(() => evaluate(layersFrom({ session: [text] }), file('write', `${'a'.repeat(4095)}b`)))).toBeLessThan(50);
    const layers = layersFrom({ session: [text] });
    expect(evaluate(layers, file('write', `${'a'.repeat(4095)}b`)).decision).toBe('allow');
    expect(evaluate(layers, file('write', `${'a'.repeat(4095)}c`)).decision).toBe('forbid');
  });

  it('refuses a glob over 512 characters at load, naming file and rule', () => {
    const glob = `${'a/'.repeat(300)}x`;
    const text = `version: 1\nrules:\n  - {id: g, tool: write, path: ${JSON.stringify(glob)}, decision: forbid}\n`;
    expect(() => parsePolicyDocument('global/big.yaml', text, 'global')).toThrow(/^global\/big\.yaml: rules\[0\] \(g\): path glob ".*": glob is 601 characters long \(at most 512\)$/);
  });

  it('refuses more than 16 wildcards (a `**` counts once), in path and except', () => {
    const seventeen = Array.from({ length: 17 }, () => '*').join('x');
    const sixteen = Array.from({ length: 16 }, () => '**').join('/');
    expect(() => parsePolicyDocument('f.yaml', `version: 1\nrules:\n  - {id: g, path: "${seventeen}", decision: forbid}\n`, 'global'))
      .toThrow(/^f\.yaml: rules\[0\] \(g\): path glob ".*": glob has 17 wildcards \(at most 16\)$/);
    expect(() => parsePolicyDocument('f.yaml', `version: 1\nrules:\n  - {id: g, path: "${sixteen}", decision: forbid}\n`, 'global')).not.toThrow();
    expect(() => parsePolicyDocument('f.yaml', `version: 1\nrules:\n  - {id: h, path: "a/**", except: ["${seventeen}"], decision: forbid}\n`, 'global'))
      .toThrow(/rules\[0\] \(h\): path glob .*17 wildcards/);
  });
});

describe('bounded policy work (§7: nothing blocks the event loop for long)', () => {
  it('adversarial globs within the limits stay in milliseconds against a 4 KiB path', () => {
    const globs = ['*?' + 'a'.repeat(490) + 'b*', `**/${'a/'.repeat(200)}b/**`, '*[a]' + 'a'.repeat(480) + 'b*', `*${'a'.repeat(500)}b*`];
    for (const g of globs) {
      const test = compileGlobMatcher(g);
      for (const path of ['a'.repeat(4096), `${'a/'.repeat(2047)}a`]) {
        expect(test(path)).toBe(false);
        expect(bestMs(() => test(path))).toBeLessThan(25);
      }
    }
  });

  it('a policy sent with a job or session is bounded in size', () => {
    const many = `version: 1\nrules:\n${Array.from({ length: 257 }, (_, k) => `  - {id: r${k}, command: [x${k}], decision: forbid}`).join('\n')}\n`;
    // Sent as a JSON object (the REST form): YAML text that large is refused before parsing (8 KiB).
    expect(() => parsePolicyDocument('session', many, 'session')).toThrow(/YAML text of \d+ bytes; .* at most 8192/);
    expect(() => parsePolicyDocument('session', parseYaml(many), 'session')).toThrow(/^session: 257 rules \(a policy sent with a job or session has at most 256\)$/);
    expect(() => parsePolicyDocument('global/a.yaml', many, 'global')).not.toThrow();
    const bigExample = `version: 1\nrules:\n  - {id: e, path: "a/**", decision: forbid, examples: {not_match: ["${'b'.repeat(8193)}"]}}\n`;
    expect(() => parsePolicyDocument('session', parseYaml(bigExample), 'session')).toThrow(/rules\[0\] \(e\): an example of examples.not_match has 8193 characters, at most 8192/);
  });

  it('the whole of a submitted policy is bounded too, and loads within milliseconds at the bounds', () => {
    const globRule = (k: number) => `  - {id: g${k}, path: "{a,b}/*?${'a'.repeat(480)}b*", decision: forbid}`;
    const over = `version: 1\nrules:\n${Array.from({ length: 20 }, (_, k) => globRule(k)).join('\n')}\n`;
    expect(() => parsePolicyDocument('session', parseYaml(over), 'session')).toThrow(/rules\[16\] \(g16\): in all, the policy's globs exceed 16384 characters once \{a,b\} is expanded/);
    const within = `version: 1\nrules:\n${Array.from({ length: 16 }, (_, k) => globRule(k)).join('\n')}\n`;
    const withinObject = parseYaml(within);
    expect(bestMs(() => parsePolicyDocument('session', withinObject, 'session'))).toBeLessThan(25);
  });

  it('paths longer than PATH_MAX are refused before any rule is read', () => {
    const e = evaluate(layersFrom({}), file('write', 'a'.repeat(4097)));
    expect(e.decision).toBe('forbid');
    expect(e.reason).toMatch(/invalid_path: 4097 characters/);
  });
});
