// The rule kinds behind one interface (services/policy/rule-kinds/): each
// kind compiles its own field, matches its own subject and reads its own
// examples; the registry picks a rule's kind from its field or its tools.
import { describe, expect, it } from 'vitest';
import { TOOL_NAMES, TOOLS } from '../../../services/protocol/index.ts';
import { evaluate, parsePolicyDocument, PolicyLoadError } from '../../../services/policy/index.ts';
import { COMMAND_RULES, prefixLength, type CommandRule } from '../../../services/policy/rule-kinds/command-rule.ts';
import { compileRule, RULE_KINDS, type Rule } from '../../../services/policy/rule-kinds/index.ts';
import type { RuleHead } from '../../../services/policy/rule-kinds/kind.ts';
import { PATH_RULES, pathRuleReaches, type PathRule } from '../../../services/policy/rule-kinds/path-rule.ts';
import { RuleSchema, type RuleInput } from '../../../services/policy/schema.ts';
import { bash, file, layersFrom } from './helpers.ts';

class Refused extends Error {}
const fail = (reason: string): never => {
  throw new Refused(reason);
};
const input = (raw: Record<string, unknown>): RuleInput => RuleSchema.parse({ id: 'r', decision: 'forbid', ...raw });
const head = (decision: RuleHead['decision'] = 'forbid'): RuleHead => ({
  id: 'r', layer: 'global', file: 'p.yaml', index: 0, tools: new Set(), decision, justification: '', appliesTo: new Set(['commands', 'seeded_files']),
});
const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    if (err instanceof Refused) return err.message;
    throw err;
  }
  throw new Error('expected a refusal');
};
const compiled = (raw: Record<string, unknown>): Rule[] => compileRule({ file: 'p.yaml', index: 0, layer: 'global' }, input(raw), fail);

describe('command rules', () => {
  const rule = (raw: Record<string, unknown>, decision: RuleHead['decision'] = 'forbid'): CommandRule =>
    COMMAND_RULES.compile(head(decision), input({ ...raw, decision }), fail);

  it('compile an argv prefix with alternatives, "*", a literal \\* and except patterns', () => {
    const r = rule({ command: ['git', ['push', 'fetch'], '*', '\\*'], except: [['git', 'push', '--dry-run']] });
    expect(r.kind).toBe('command');
    expect(prefixLength(r)).toBe(4);
    expect(COMMAND_RULES.matches(r, ['git', 'push', 'origin', '*', 'extra'])).toBe(true);
    expect(COMMAND_RULES.matches(r, ['git', 'fetch', 'x', '*'])).toBe(true);
    expect(COMMAND_RULES.matches(r, ['git', 'fetch', 'x', 'y'])).toBe(false);
    expect(COMMAND_RULES.matches(r, ['git', 'push', 'origin'])).toBe(false);
    expect(COMMAND_RULES.matches(r, ['git', 'push', '--dry-run', '*'])).toBe(false);
  });

  it('match a path-qualified program by base name for forbid and prompt rules only', () => {
    expect(COMMAND_RULES.matches(rule({ command: ['curl'] }, 'forbid'), ['/usr/bin/curl', 'x'])).toBe(true);
    expect(COMMAND_RULES.matches(rule({ command: ['curl'] }, 'prompt'), ['/usr/bin/curl'])).toBe(true);
    expect(COMMAND_RULES.matches(rule({ command: ['curl'] }, 'allow'), ['/usr/bin/curl'])).toBe(false);
  });

  it('without a pattern match every argv, minus the excepts', () => {
    const r = rule({ tool: 'bash', except: [['ls']] });
    expect(prefixLength(r)).toBe(0);
    expect(COMMAND_RULES.matches(r, ['make', 'all'])).toBe(true);
    expect(COMMAND_RULES.matches(r, ['ls', '-la'])).toBe(false);
  });

  it('read string examples as one simple command, lists as an argv, assignments both ways', () => {
    const r = rule({ command: ['env', 'X=1', 'ls'] });
    expect(COMMAND_RULES.matchesExample(r, 'env X=1 ls -la', fail)).toBe(true);
    expect(COMMAND_RULES.matchesExample(r, ['env', 'X=1', 'ls'], fail)).toBe(true);
    expect(COMMAND_RULES.matchesExample(r, 'X=1 ls', fail)).toBe(true);
    expect(COMMAND_RULES.matchesExample(r, 'ls', fail)).toBe(false);
    expect(refusal(() => COMMAND_RULES.matchesExample(r, 'ls | wc', fail))).toBe('example "ls | wc" is not one simple command');
    expect(refusal(() => COMMAND_RULES.matchesExample(r, 'x=$(id)', fail))).toMatch(/^example "x=\$\(id\)" is not one simple command \(/);
  });

  it('take argv patterns, not globs, in except', () => {
    expect(COMMAND_RULES.refuseExcept(['ls'], 0)).toBeUndefined();
    expect(COMMAND_RULES.refuseExcept('a/**', 2)).toBe('except[2]: bash rules take argv patterns (lists), got a string');
    expect(refusal(() => rule({ command: ['ls'], except: [['ls', '-a'], 'x/**'] }))).toBe('except[1]: bash rules take argv patterns (lists), got a string');
  });
});

describe('path rules', () => {
  const rule = (raw: Record<string, unknown>): PathRule => PATH_RULES.compile(head(), input(raw), fail);

  it('compile workspace globs (./x and /workspace/x are spellings of x) and except globs', () => {
    const r = rule({ path: ['./src/**/*.ts', '/workspace/.git/**'], except: ['src/gen/**'] });
    expect(r.kind).toBe('path');
    expect(r.globs?.map((m) => m.glob)).toEqual(['src/**/*.ts', '.git/**']);
    expect(PATH_RULES.matches(r, 'src/a/b.ts')).toBe(true);
    expect(PATH_RULES.matches(r, '.git')).toBe(true);
    expect(PATH_RULES.matches(r, 'src/gen/x.ts')).toBe(false);
    expect(PATH_RULES.matches(r, 'docs/a.md')).toBe(false);
  });

  it('reach under a directory when some glob may match an entry there (excepts aside)', () => {
    const r = rule({ path: 'a/b/*.key', except: ['a/b/x.key'] });
    expect(pathRuleReaches(r, 'a', false)).toBe(true);
    expect(pathRuleReaches(r, 'c', false)).toBe(false);
    expect(pathRuleReaches(rule({ tool: 'write' }), 'anything', false)).toBe(true);
  });

  it('refuse globs outside the workspace, with ..', () => {
    expect(refusal(() => rule({ path: '/etc/**' }))).toBe('path glob "/etc/**" is outside the workspace (globs are relative to it)');
    expect(refusal(() => rule({ path: 'a/../b' }))).toBe("path glob \"a/../b\" must not contain '..'");
  });

  it('read examples as workspace paths, never as argv', () => {
    const r = rule({ path: 'a/**' });
    expect(PATH_RULES.matchesExample(r, './a//b', fail)).toBe(true);
    expect(PATH_RULES.matchesExample(r, 'b', fail)).toBe(false);
    expect(refusal(() => PATH_RULES.matchesExample(r, ['a'], fail))).toBe('example ["a"]: file rules take path examples (strings)');
    expect(refusal(() => PATH_RULES.matchesExample(r, '../x', fail))).toMatch(/^example "\.\.\/x": path_outside_workspace/);
  });

  it('take globs, not argv patterns, in except; except errors come before those of path', () => {
    expect(PATH_RULES.refuseExcept('x/**', 0)).toBeUndefined();
    expect(PATH_RULES.refuseExcept(['ls'], 1)).toBe('except[1]: file rules take globs (strings), got a list');
    expect(refusal(() => rule({ path: '/etc/x', except: [['rm']] }))).toBe('except[0]: file rules take globs (strings), got a list');
  });
});

describe('choosing a rule kind', () => {
  it('registers one kind per way a tool is judged, so every tool has exactly one', () => {
    for (const t of TOOL_NAMES) expect(RULE_KINDS.filter((k) => k.judged === TOOLS[t].judged).map((k) => k.kind)).toHaveLength(1);
    expect(new Set(RULE_KINDS.map((k) => k.field)).size).toBe(RULE_KINDS.length);
  });

  it.each<[string, Record<string, unknown>, Rule['kind'], string[]]>([
    ['command without tool', { command: ['ls'] }, 'command', ['bash']],
    ['path without tool', { path: 'a/**' }, 'path', TOOL_NAMES.filter((t) => TOOLS[t].judged === 'paths')],
    ['tool bash alone (its descriptor: script)', { tool: 'bash' }, 'command', ['bash']],
    ['file tools alone (their descriptors: paths)', { tool: ['read', 'copy'], except: ['x/**'] }, 'path', ['read', 'copy']],
  ])('%s', (_name, raw, kind, tools) => {
    const rules = compiled(raw);
    expect(rules.map((r) => r.kind)).toEqual([kind]);
    expect([...rules[0]!.tools]).toEqual(tools);
  });

  it('makes a rule with neither field over tools judged both ways one rule of each kind', () => {
    const rules = compiled({ tool: ['write', 'bash', 'read'], examples: { match: ['make all'] } });
    expect(rules.map((r) => [r.kind, [...r.tools], r.id, r.index])).toEqual([
      ['command', ['bash'], 'r', 0],
      ['path', ['write', 'read'], 'r', 0],
    ]);
  });

  it('reports such a rule once when both of its kinds match', () => {
    const layers = layersFrom({ global: ['rules:\n  - {id: both, tool: [bash, write], decision: prompt}\n  - {id: after, tool: bash, command: [echo], decision: prompt}\n'] });
    const e = evaluate(layers, bash('echo hi > out.txt'));
    expect(e.matched_rules.map((r) => r.id)).toEqual(['both', 'after']);
    expect(evaluate(layers, file('write', 'x')).matched_rules.map((r) => r.id)).toEqual(['both']);
    expect(evaluate(layers, file('read', 'x')).matched_rules).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['command and path', { tool: 'bash', command: ['ls'], path: 'a' }, 'a rule has `command` or `path`, not both'],
    ['neither field nor tool', {}, 'a rule needs `tool`, `command` or `path` (network rules: `host` or `cidr`)'],
    ['command on a file tool', { tool: ['bash', 'write'], command: ['ls'] }, '`command` applies to bash only; file tools take `path`'],
    ['path on bash', { tool: ['read', 'bash'], path: 'a/**' }, '`path` applies to file tools only; bash takes `command`'],
    ['both kinds, a glob except', { tool: ['bash', 'write'], except: ['x/**', ['ls']] }, 'except[0]: bash rules take argv patterns (lists), got a string'],
    ['both kinds, an argv except', { tool: ['bash', 'write'], except: [['ls'], 'x/**'] }, 'except[0]: file rules take globs (strings), got a list'],
  ])('refuses %s with the message it always had', (_name, raw, message) => {
    expect(refusal(() => compiled(raw))).toBe(message);
    const doc = { rules: [{ id: 'r', decision: 'forbid', ...raw }] };
    expect(() => parsePolicyDocument('p.yaml', doc, 'global')).toThrow(new PolicyLoadError(`p.yaml: rules[0] (r): ${message}`, 'p.yaml'));
  });
});
