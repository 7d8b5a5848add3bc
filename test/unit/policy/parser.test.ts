import { describe, expect, it } from 'vitest';
import { parsePolicyDocument, PolicyLoadError } from '../../../services/policy/index.ts';

function loadError(text: string | unknown): PolicyLoadError {
  try {
    parsePolicyDocument('p.yaml', text, 'global');
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as PolicyLoadError).code).toBe('invalid_policy');
    return err as PolicyLoadError;
  }
  throw new Error('expected a load error');
}

const rule = (extra: string): string => `version: 1\nrules:\n  - id: r0\n    tool: bash\n    command: ["ls"]\n    decision: allow\n${extra}`;

describe('parsePolicyDocument: the format of POLICY.md §2', () => {
  it('loads the example file of the spec', () => {
    const f = parsePolicyDocument(
      'spec.yaml',
      `version: 1
defaults:
  bash: prompt
  write: allow
rules:
  - id: git-readonly
    tool: bash
    command: ["git", ["status", "diff", "log", "show"]]
    decision: allow
    justification: read-only git
    examples:
      match: ["git status", "git log -n 3"]
      not_match: ["git push"]
  - id: no-network-tools
    tool: bash
    command: [["curl", "wget", "nc", "ssh", "scp"]]
    decision: forbid
    justification: the sandbox has no network; do not try
  - id: terraform
    tool: bash
    command: ["terraform"]
    decision: prompt
    except: [["terraform", ["fmt", "validate"]]]
  - id: protect-git-dir
    tool: [write, append, edit, mkdir, touch, copy]
    path: ".git/**"
    decision: forbid
`,
      'global',
    );
    expect(f.defaults).toEqual({ bash: 'prompt', write: 'allow' });
    expect(f.rules.map((r) => [r.id, r.decision, r.justification])).toEqual([
      ['git-readonly', 'allow', 'read-only git'],
      ['no-network-tools', 'forbid', 'the sandbox has no network; do not try'],
      ['terraform', 'prompt', ''],
      ['protect-git-dir', 'forbid', ''],
    ]);
    expect([...f.rules[3]!.tools]).toEqual(['write', 'append', 'edit', 'mkdir', 'touch', 'copy']);
  });

  it('accepts an already-parsed job body without version', () => {
    const f = parsePolicyDocument('job policy', { rules: [{ id: 'x', tool: 'bash', command: ['make'], decision: 'forbid' }] }, 'session');
    expect(f.rules).toHaveLength(1);
    expect(f.layer).toBe('session');
    expect(parsePolicyDocument('job policy', { rules: [] }, 'session').rules).toEqual([]);
  });

  it('takes unquoted YAML numbers in command tokens and ids as text', () => {
    const f = parsePolicyDocument('p.yaml', 'version: 1\nrules:\n  - {id: 7, tool: bash, command: [chmod, 755], decision: prompt, examples: {match: ["chmod 755 x"], not_match: ["chmod 644 x"]}}\n', 'global');
    expect(f.rules[0]!.id).toBe('7');
  });

  it('infers bash from command and every file tool from path when tool is left out', () => {
    const f = parsePolicyDocument('p.yaml', 'rules:\n  - {id: a, command: [ls], decision: allow}\n  - {id: b, path: "x/**", decision: forbid}\n', 'global');
    expect([...f.rules[0]!.tools]).toEqual(['bash']);
    expect([...f.rules[1]!.tools].sort()).toEqual(['append', 'copy', 'edit', 'mkdir', 'read', 'touch', 'write']);
  });
});

describe('parsePolicyDocument: load errors name FILE: rules[INDEX] (id): reason', () => {
  it.each<[string, string | unknown, RegExp]>([
    ['YAML syntax', 'version: 1\nrules: [\n', /^p\.yaml: YAML error: /],
    ['duplicate YAML key', 'version: 1\nversion: 1\n', /^p\.yaml: YAML error: .*[Mm]ap keys must be unique/],
    ['empty file', '', /^p\.yaml: empty policy file/],
    ['not a mapping', '- a\n- b\n', /^p\.yaml: /],
    ['unknown top-level field', 'version: 1\nrulez: []\n', /^p\.yaml: .*rulez/],
    ['wrong version', 'version: 2\nrules: []\n', /^p\.yaml: version: /],
    ['unknown default key', 'version: 1\ndefaults:\n  bassh: allow\n', /^p\.yaml: defaults: .*bassh/],
    ['bad default decision', 'version: 1\ndefaults:\n  bash: maybe\n', /^p\.yaml: defaults\.bash: /],
    ['unknown rule field', rule('    justificaton: typo\n'), /^p\.yaml: rules\[0\] \(r0\): .*justificaton/],
    ['bad decision', 'version: 1\nrules:\n  - id: r0\n    tool: bash\n    command: [ls]\n    decision: deny\n', /^p\.yaml: rules\[0\] \(r0\): decision: /],
    ['unknown tool', 'version: 1\nrules:\n  - id: r0\n    tool: shell\n    command: [ls]\n    decision: allow\n', /^p\.yaml: rules\[0\] \(r0\): tool/],
    ['missing id', 'version: 1\nrules:\n  - tool: bash\n    command: [ls]\n    decision: allow\n', /^p\.yaml: rules\[0\] \(\?\): id: /],
    ['empty command', 'version: 1\nrules:\n  - {id: r0, tool: bash, command: [], decision: allow}\n', /^p\.yaml: rules\[0\] \(r0\): command: /],
    ['command and path', 'version: 1\nrules:\n  - {id: r0, tool: bash, command: [ls], path: "a", decision: allow}\n', /^p\.yaml: rules\[0\] \(r0\): .*not both/],
    ['command on a file tool', 'version: 1\nrules:\n  - {id: r0, tool: write, command: [ls], decision: allow}\n', /^p\.yaml: rules\[0\] \(r0\): `command` applies to bash only/],
    ['path on bash', 'version: 1\nrules:\n  - {id: r0, tool: bash, path: "a/**", decision: allow}\n', /^p\.yaml: rules\[0\] \(r0\): `path` applies to file tools only/],
    ['absolute glob outside', 'version: 1\nrules:\n  - {id: r0, tool: write, path: "/etc/**", decision: forbid}\n', /^p\.yaml: rules\[0\] \(r0\): path glob .* outside the workspace/],
    ['duplicate id', 'version: 1\nrules:\n  - {id: a, tool: bash, command: [ls], decision: allow}\n  - {id: a, tool: bash, command: [cat], decision: allow}\n', /^p\.yaml: rules\[1\] \(a\): duplicate rule id/],
    ['match example fails', rule('    examples:\n      match: ["cat x"]\n'), /^p\.yaml: rules\[0\] \(r0\): example "cat x" is listed in match but the rule does not match it$/],
    ['not_match example fails', rule('    examples:\n      not_match: ["ls -la"]\n'), /^p\.yaml: rules\[0\] \(r0\): example "ls -la" is listed in not_match but the rule matches it$/],
    ['argv example fails', rule('    examples:\n      match: [["cat", "x"]]\n'), /^p\.yaml: rules\[0\] \(r0\): example \["cat","x"\] is listed in match/],
    ['example is not one simple command', rule('    examples:\n      match: ["ls && ls"]\n'), /^p\.yaml: rules\[0\] \(r0\): example "ls && ls" is not one simple command/],
    ['path example fails', 'version: 1\nrules:\n  - {id: g, tool: write, path: ".git/**", decision: forbid, examples: {match: [".github/x"]}}\n', /^p\.yaml: rules\[0\] \(g\): example "\.github\/x" is listed in match/],
    ['path example outside', 'version: 1\nrules:\n  - {id: g, tool: write, path: "**", decision: forbid, examples: {match: ["../x"]}}\n', /^p\.yaml: rules\[0\] \(g\): example "\.\.\/x": path_outside_workspace/],
    ['bad job body', { rules: [{ id: 'x', decision: 'allow' }] }, /^p\.yaml: rules\[0\] \(x\): a rule needs `tool`, `command` or `path`/],
  ])('%s', (_name, text, message) => {
    expect(loadError(text).message).toMatch(message);
  });

  it('reports the index of the failing rule, not the first', () => {
    const text = `version: 1
rules:
  - {id: ok-1, tool: bash, command: [ls], decision: allow}
  - {id: ok-2, tool: bash, command: [cat], decision: allow}
  - {id: broken, tool: bash, command: [git], decision: allow, examples: {not_match: ["git push"]}}
`;
    expect(loadError(text).message).toBe(
      'p.yaml: rules[2] (broken): example "git push" is listed in not_match but the rule matches it',
    );
  });
});
