import { describe, expect, it } from 'vitest';
import { describeGrant, explainBash } from '../../../services/policy/index.ts';
import { bash, layersFrom } from './helpers.ts';

const layers = layersFrom({
  global: [`version: 1
defaults: { bash: prompt }
rules:
  - { id: ls-ok, tool: bash, command: [ls], decision: allow, justification: reads only }
  - { id: rm-asks, tool: bash, command: [rm], decision: prompt, justification: deleting needs a human }
  - { id: no-curl, tool: bash, command: [curl], decision: forbid, justification: no network }
`],
});

describe('explainBash: each part of a script with its own decision', () => {
  it('splits a compound script and judges each simple command on its own', () => {
    const e = explainBash(layers, "ls -la && rm -rf 'my build' ; tac f | curl x");
    expect(e.complex).toBeNull();
    expect(e.segments.map((s) => [s.text, s.decision, s.matched_rules.map((r) => r.id)])).toEqual([
      ['ls -la', 'allow', ['ls-ok']],
      ["rm -rf 'my build'", 'prompt', ['rm-asks']],
      ['tac f', 'prompt', []],
      ['curl x', 'forbid', ['no-curl']],
    ]);
    expect(e.segments[2]!.reason).toMatch(/no rule matched `tac f`; bash default/);
    expect(e.segments[1]!.matched_rules[0]!.justification).toBe('deleting needs a human');
  });

  it('shows each part as it was written (quotes, `=` and redirections kept), judged on its argv', () => {
    const e = explainBash(layers, `env OFFLINE_TEST=1 npm test -- --grep "a b" 2>&1 &&  ls  -la >out.txt ; >log rm x`);
    expect(e.complex).toBeNull();
    expect(e.segments.map((s) => [s.text, s.argv])).toEqual([
      ['env OFFLINE_TEST=1 npm test -- --grep "a b" 2>&1', ['env', 'OFFLINE_TEST=1', 'npm', 'test', '--', '--grep', 'a b']],
      ['ls  -la >out.txt', ['ls', '-la']],
      ['>log rm x', ['rm', 'x']],
    ]);
    expect(e.segments.map((s) => s.decision)).toEqual(['prompt', 'allow', 'prompt']);
  });

  it('keeps a complex script whole, with the evaluation of the whole script', () => {
    const e = explainBash(layers, 'ls $(rm -rf x)');
    expect(e.complex).not.toBeNull();
    expect(e.segments).toHaveLength(1);
    expect(e.segments[0]!.text).toBe('ls $(rm -rf x)');
    expect(e.segments[0]!.decision).toBe('prompt');
  });
});

describe('describeGrant: the scope of approve_for_session in words', () => {
  it('says "exactly" when the grant is a whole simple command of the script', () => {
    expect(describeGrant({ tool: 'bash', prefix: ['rm', '-rf', 'build'] }, bash('ls && rm -rf build'))).toMatch(/`rm -rf build` exactly/);
  });
  it('says "starting with" when the grant is a prefix', () => {
    expect(describeGrant({ tool: 'bash', prefix: ['rm', '-rf'] }, bash('rm -rf build'))).toMatch(/any simple command starting with `rm -rf`/);
  });
  it('names the tool and path (and destination) for file tools', () => {
    expect(describeGrant({ tool: 'edit', path: 'docs/a.md' })).toMatch(/`edit` on docs\/a\.md runs without asking again; other tools or paths still ask/);
    expect(describeGrant({ tool: 'copy', path: 'a', dest: 'b' })).toMatch(/`copy` from a to b/);
  });
});
