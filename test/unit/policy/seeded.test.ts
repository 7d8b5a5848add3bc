// Seeded and uploaded files are judged as writes of their paths by the rules
// whose `applies_to` includes `seeded_files` (the default), and commands by
// those that include `commands` (the default): the shipped `.git/**` rule is
// for commands only, so a repository uploads whole while no command writes there.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { evaluate, evaluateSeededFile, loadPolicyDir, parsePolicyDocument, type PolicyStore } from '../../../services/policy/index.ts';
import { file, layersFrom } from './helpers.ts';

const rules = (...r: string[]) => `version: 1\nrules:\n${r.join('')}`;
const rule = (id: string, extra: string) => `  - id: ${id}\n    tool: write\n    path: "x/**"\n    decision: forbid\n${extra}`;

describe('applies_to', () => {
  it('defaults to both: a rule judges commands and seeded files', () => {
    const layers = layersFrom({ global: [rules(rule('both', ''))] });
    expect(evaluate(layers, file('write', 'x/a')).decision).toBe('forbid');
    expect(evaluateSeededFile(layers, 'x/a')).toMatchObject({ decision: 'forbid', matched_rules: [{ id: 'both', layer: 'global' }] });
  });

  it('[commands] leaves seeded files to the other rules and defaults; [seeded_files] leaves commands', () => {
    const layers = layersFrom({ global: [rules(rule('cmds', '    applies_to: [commands]\n'), rule('seeds', '    applies_to: [seeded_files]\n').replace('x/**', 'y/**'))] });
    expect(evaluate(layers, file('write', 'x/a')).matched_rules.map((r) => r.id)).toEqual(['cmds']);
    expect(evaluateSeededFile(layers, 'x/a')).toMatchObject({ decision: 'allow', matched_rules: [] });
    expect(evaluateSeededFile(layers, 'x/a').reason).toMatch(/no rule matched seeded file x\/a; write default/);
    expect(evaluate(layers, file('write', 'y/a')).decision).toBe('allow');
    expect(evaluateSeededFile(layers, 'y/a')).toMatchObject({ decision: 'forbid', reason: expect.stringContaining('forbid by rule seeds (global) for seeded file y/a') });
  });

  it('judges seeded files as writes: write rules only, the write default, the workspace invariant', () => {
    const editOnly = `version: 1\ndefaults:\n  write: prompt\nrules:\n  - id: e\n    tool: edit\n    path: "**"\n    decision: forbid\n`;
    const layers = layersFrom({ global: [editOnly] });
    expect(evaluateSeededFile(layers, 'a.txt')).toMatchObject({ decision: 'prompt', matched_rules: [] });
    expect(evaluateSeededFile(layersFrom({}), '../etc/passwd')).toMatchObject({ decision: 'forbid', reason: expect.stringContaining('path_outside_workspace') });
  });

  it('refuses applies_to: [seeded_files] on a rule without write (it could never judge anything) and unknown values', () => {
    const bashOnly = `version: 1\nrules:\n  - id: b\n    command: [ls]\n    decision: forbid\n    applies_to: [seeded_files]\n`;
    expect(() => parsePolicyDocument('p.yaml', bashOnly, 'global')).toThrow(/rules\[0\] \(b\): applies_to: \[seeded_files\] needs `write`/);
    expect(() => parsePolicyDocument('p.yaml', rules(rule('u', '    applies_to: [uploads]\n')), 'global')).toThrow(/applies_to/);
    expect(() => parsePolicyDocument('p.yaml', rules(rule('e', '    applies_to: []\n')), 'global')).toThrow(/applies_to/);
  });
});

describe('the shipped policies and a repository', () => {
  let store: PolicyStore;
  beforeAll(async () => {
    store = await loadPolicyDir(fileURLToPath(new URL('../../../policies', import.meta.url)));
  });

  it('let .git arrive with an upload and still forbid commands to write there', () => {
    const layers = store.layers(undefined);
    for (const p of ['.git', '.git/config', '.git/hooks/pre-commit', '.git/objects/ab/cdef']) {
      expect(evaluateSeededFile(layers, p).decision, p).toBe('allow');
      expect(evaluate(layers, file('write', p)).decision, p).toBe('forbid');
    }
    expect(evaluateSeededFile(layers, 'src/app.js').decision).toBe('allow');
    // The workspace root itself is no file: whole-workspace writes stay forbidden either way.
    expect(evaluateSeededFile(layers, '.').decision).toBe('forbid');
  });
});
