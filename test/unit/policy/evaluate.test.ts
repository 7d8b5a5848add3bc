// Table-driven checks of POLICY.md §1, §3 and §6 against small inline policies.
import { describe, expect, it } from 'vitest';
import { evaluate, type Decision } from '../../../services/policy/index.ts';
import { bash, file, layersFrom } from './helpers.ts';

const GLOBAL = `version: 1
rules:
  - id: git-readonly
    tool: bash
    command: ["git", ["status", "diff", "log", "show"]]
    decision: allow
    justification: read-only git
  - id: ls
    tool: bash
    command: [["ls", "cat", "echo"]]
    decision: allow
  - id: no-network
    tool: bash
    command: [["curl", "wget"]]
    decision: forbid
    justification: no network
  - id: rm-root
    tool: bash
    command: ["rm", "-rf", "/"]
    decision: forbid
  - id: rm
    tool: bash
    command: ["rm"]
    decision: allow
  - id: npm-install
    tool: bash
    command: ["npm", "install"]
    decision: prompt
  - id: terraform
    tool: bash
    command: ["terraform"]
    decision: prompt
    except: [["terraform", ["fmt", "validate"]]]
  - id: docker-any-ps
    tool: bash
    command: ["docker", "*", "ps"]
    decision: forbid
  - id: protect-git-dir
    tool: [write, append, edit, mkdir, touch, copy]
    path: ".git/**"
    decision: forbid
  - id: src-star
    tool: write
    path: "src/*.ts"
    decision: prompt
  - id: docs-deep
    tool: write
    path: "docs/**/*.md"
    decision: allow
  - id: build-out
    tool: [write, copy]
    path: "build/**"
    decision: prompt
    except: ["build/keep/**"]
`;

const layers = layersFrom({ global: [GLOBAL] });

describe('evaluate: bash rules (argv prefix, alternatives, "*", except)', () => {
  it.each<[string, Decision, string[]]>([
    ['git status', 'allow', ['git-readonly']],
    ['git log -n 3', 'allow', ['git-readonly']],
    ['git push', 'prompt', []],
    ['git', 'prompt', []],
    ['ls -la', 'allow', ['ls']],
    ['cat a b', 'allow', ['ls']],
    ['curl https://x', 'forbid', ['no-network']],
    ['wget x', 'forbid', ['no-network']],
    ['/usr/bin/curl x', 'forbid', ['no-network']], // path-qualified program still hits a forbid
    ['/usr/bin/ls', 'prompt', []], // …but never earns an allow
    // matched_rules lists looser ones too; a recursive delete of / writes the
    // whole workspace, so every restriction on a path there matches as well (§7).
    ['rm -rf /', 'forbid', ['rm-root', 'rm', 'protect-git-dir', 'src-star', 'build-out']],
    ['rm -rf dist', 'allow', ['rm']],
    ['rm -rf build', 'prompt', ['rm', 'build-out']], // deletes build/**, which build-out guards
    ['rm -rf / --no-preserve-root', 'forbid', ['rm-root', 'rm', 'protect-git-dir', 'src-star', 'build-out']],
    ['npm install left-pad', 'prompt', ['npm-install']],
    ['npm test', 'prompt', []],
    ['terraform apply', 'prompt', ['terraform']],
    ['terraform fmt', 'prompt', []], // except carves it out: no rule, bash default
    ['terraform validate -json', 'prompt', []],
    ['terraform fmtx', 'prompt', ['terraform']], // except is exact per token
    ['docker x ps', 'forbid', ['docker-any-ps']],
    ['docker x images', 'prompt', []],
    ['docker ps', 'prompt', []], // "*" needs exactly one token there
    ['GIT=1 git status', 'prompt', ['git-readonly']], // a leading assignment is complex (§7)
    ['git status > out.txt 2>&1', 'allow', ['git-readonly']],
    ['"git" \'status\'', 'allow', ['git-readonly']],
    ['Git status', 'prompt', []], // case-sensitive
  ])('%j → %s', (cmd, decision, ids) => {
    const e = evaluate(layers, bash(cmd));
    expect(e.decision).toBe(decision);
    expect(e.matched_rules.map((r) => r.id)).toEqual(ids);
  });

  it('matched rules carry layer, decision and justification', () => {
    expect(evaluate(layers, bash('git status && curl x')).matched_rules).toEqual([
      { id: 'git-readonly', layer: 'global', decision: 'allow', justification: 'read-only git' },
      { id: 'no-network', layer: 'global', decision: 'forbid', justification: 'no network' },
    ]);
  });
});

describe('evaluate: scripts split into simple commands, strictest wins', () => {
  it.each<[string, Decision]>([
    ['git status && rm -rf /', 'forbid'],
    ['ls; curl x', 'forbid'],
    ['ls | cat', 'allow'],
    ['ls || unknown-tool', 'prompt'],
    ['ls &\ncurl x', 'forbid'],
    ['ls\nrm -rf /', 'forbid'],
    ['ls |& cat', 'allow'],
    ['echo "curl x; rm -rf /"', 'allow'], // quoted: one echo
    ["echo 'a && curl x'", 'allow'],
    ['ls # && curl x', 'allow'], // a comment
    ['git status && npm install x', 'prompt'],
    ['ls > /dev/null && cat < in.txt', 'allow'],
  ])('%j → %s', (cmd, decision) => {
    expect(evaluate(layers, bash(cmd)).decision).toBe(decision);
  });
});

describe('evaluate: complex scripts are never allowed by a rule', () => {
  // matched_rules lists allow rules that match a readable command too (every
  // matching rule is listed), but only forbid/prompt rules move the decision.
  it.each<[string, Decision, string[]]>([
    ['echo $(whoami)', 'prompt', ['ls']],
    ['echo `ls`', 'prompt', ['ls']],
    ['(ls)', 'prompt', ['ls']],
    ['{ ls; }', 'prompt', ['ls']],
    ['if true; then ls; fi', 'prompt', ['ls']],
    ['for f in a b; do cat $f; done', 'prompt', ['ls']],
    ['! ls', 'prompt', ['ls']],
    ['diff <(ls) <(ls)', 'prompt', ['ls']],
    ['cat <<EOF\nhi\nEOF', 'prompt', ['ls']],
    ['$SHELL -c ls', 'prompt', []],
    ['x=$(whoami)', 'prompt', []],
    // forbid/prompt rules matching any readable simple command still count
    ['echo $(curl x)', 'forbid', ['ls', 'no-network']],
    ['(cd /; rm -rf /)', 'forbid', ['rm-root', 'rm', 'protect-git-dir', 'src-star', 'build-out']],
    ['if true; then curl x; fi', 'forbid', ['no-network']],
    ['ls $(npm install y)', 'prompt', ['ls', 'npm-install']],
    ['for f in *; do terraform apply; done', 'prompt', ['terraform']],
  ])('%j → %s', (cmd, decision, ids) => {
    const e = evaluate(layers, bash(cmd));
    expect(e.decision).toBe(decision);
    expect(e.matched_rules.map((r) => r.id)).toEqual(ids);
    expect(e.reason).toMatch(/^complex script \(/);
  });

  it('a complex_command default of allow still cannot beat a forbid, and allow rules are ignored', () => {
    const l = layersFrom({ global: [GLOBAL, 'version: 1\ndefaults:\n  complex_command: allow\n'] });
    expect(evaluate(l, bash('echo $(whoami)')).decision).toBe('allow');
    expect(evaluate(l, bash('echo $(curl x)')).decision).toBe('forbid');
  });

  it('complex_command is settable, and stricter than bash does not leak into simple scripts', () => {
    const l = layersFrom({ global: [GLOBAL], project: ['version: 1\ndefaults:\n  complex_command: forbid\n'] });
    expect(evaluate(l, bash('echo $(whoami)')).decision).toBe('forbid');
    expect(evaluate(l, bash('ls')).decision).toBe('allow');
  });
});

describe('evaluate: file tools, globs and the workspace invariant', () => {
  it.each<[ReturnType<typeof file>, Decision, string[]]>([
    [file('write', '.git/config'), 'forbid', ['protect-git-dir']],
    [file('write', '.git'), 'forbid', ['protect-git-dir']], // `.git/**` also matches `.git`
    [file('mkdir', './.git//hooks'), 'forbid', ['protect-git-dir']],
    [file('write', '/workspace/.git/HEAD'), 'forbid', ['protect-git-dir']],
    [file('write', 'src/../.git/x'), 'forbid', ['protect-git-dir']],
    [file('write', '.github/workflows/ci.yml'), 'allow', []],
    [file('write', 'sub/.git/config'), 'allow', []], // globs are anchored at the workspace root
    [file('read', '.git/config'), 'allow', []], // the rule does not list read
    [file('write', 'src/a.ts'), 'prompt', ['src-star']],
    [file('write', 'src/.hidden.ts'), 'prompt', ['src-star']], // dotfiles match
    [file('write', 'src/lib/a.ts'), 'allow', []], // `*` stays within one segment
    [file('write', 'src/A.TS'), 'allow', []], // case-sensitive
    [file('write', 'docs/a.md'), 'allow', ['docs-deep']], // `**` = zero segments
    [file('write', 'docs/x/y/z.md'), 'allow', ['docs-deep']],
    [file('write', 'build/out.js'), 'prompt', ['build-out']],
    [file('write', 'build/keep/out.js'), 'allow', []], // except carves out exactly that
    [file('copy', 'src/x.txt', '.git/x'), 'forbid', ['protect-git-dir']], // dest is checked
    [file('copy', '.git/HEAD', 'backup/HEAD'), 'forbid', ['protect-git-dir']], // and path
    [file('copy', 'a.txt', 'build/a.txt'), 'prompt', ['build-out']],
    [file('copy', 'a.txt', 'b.txt'), 'allow', []],
    [file('mkdir', '.'), 'allow', []], // the root: `.git/**` is not it
  ])('%j → %s', (command, decision, ids) => {
    const e = evaluate(layers, command);
    expect(e.decision).toBe(decision);
    expect(e.matched_rules.map((r) => r.id)).toEqual(ids);
  });

  it.each([
    file('write', '../x'),
    file('read', '/etc/passwd'),
    file('read', 'a/../../etc/passwd'),
    file('write', '/workspace/../etc/x'),
    file('copy', 'a.txt', '../../b.txt'),
    file('copy', '/etc/shadow', 'b.txt'),
  ])('%j is refused with path_outside_workspace before any rule', (command) => {
    // An allow-everything policy must not change a hard invariant.
    const open = layersFrom({ global: ['version: 1\nrules:\n  - {id: all, path: "**", decision: allow}\n'] });
    expect(evaluate(open, file('touch', '/workspace')).matched_rules.map((r) => r.id)).toEqual(['all']); // `**` reaches the root
    const e = evaluate(open, command);
    expect(e.decision).toBe('forbid');
    expect(e.reason).toContain('path_outside_workspace');
    expect(e.matched_rules).toEqual([]);
  });
});

describe('evaluate: glob details', () => {
  it.each<[string, string, boolean]>([
    ['**/*.md', 'README.md', true], // `**/` = zero segments too
    ['**/*.md', 'a/b/c.md', true],
    ['a/*/c', 'a/b/c', true],
    ['a/*/c', 'a/b/x/c', false],
    ['?.txt', 'a.txt', true],
    ['?.txt', 'ab.txt', false],
    ['*.ts', 'src/a.ts', false],
    ['!secret', '!secret', true], // a leading ! is literal, not a negation
    ['!secret', 'src/a.ts', false],
    ['./docs/**', 'docs/x', true], // globs are normalised like paths
    ['/workspace/docs/**', 'docs/x', true],
    ['**', '.', true],
    ['docs/**', '.', false],
  ])('%s vs %s → %s', (glob, path, hit) => {
    const l = layersFrom({ global: [`version: 1\nrules:\n  - {id: g, tool: write, path: ${JSON.stringify(glob)}, decision: forbid}\n`] });
    expect(evaluate(l, file('write', path)).decision).toBe(hit ? 'forbid' : 'allow');
  });
});

describe('evaluate: layers and defaults', () => {
  it.each<[string, string, Decision]>([
    ['allow cannot loosen a global forbid', 'version: 1\nrules:\n  - {id: p, tool: bash, command: [curl], decision: allow}\n', 'forbid'],
    ['allow cannot loosen a global prompt', 'version: 1\nrules:\n  - {id: p, tool: bash, command: [npm, install], decision: allow}\n', 'prompt'],
    ['defaults cannot loosen a global rule', 'version: 1\ndefaults:\n  bash: allow\n', 'prompt'],
  ])('project layer: %s', (_name, project, decision) => {
    const l = layersFrom({ global: [GLOBAL], project: [project] });
    const cmd = decision === 'forbid' ? 'curl x' : 'npm install';
    const e = evaluate(l, bash(cmd));
    expect(e.decision).toBe(decision);
    expect(e.matched_rules.map((r) => r.layer)).toContain('global');
  });

  it('a later layer can add restrictions, listed with its layer', () => {
    const l = layersFrom({
      global: [GLOBAL],
      project: ['version: 1\nrules:\n  - {id: no-cat, tool: bash, command: [cat], decision: prompt}\n'],
      session: ['version: 1\nrules:\n  - {id: no-ls, tool: bash, command: [ls], decision: forbid, justification: session says no}\n'],
    });
    expect(evaluate(l, bash('cat x')).decision).toBe('prompt');
    const e = evaluate(l, bash('ls'));
    expect(e.decision).toBe('forbid');
    expect(e.matched_rules).toEqual([
      { id: 'ls', layer: 'global', decision: 'allow', justification: '' },
      { id: 'no-ls', layer: 'session', decision: 'forbid', justification: 'session says no' },
    ]);
  });

  it.each<[string, { global?: string[]; project?: string[]; session?: string[] }, Decision]>([
    ['built-in bash → prompt', {}, 'prompt'],
    ['global sets bash', { global: ['version: 1\ndefaults: {bash: allow}\n'] }, 'allow'],
    ['project overrides global (most specific layer)', { global: ['version: 1\ndefaults: {bash: forbid}\n'], project: ['version: 1\ndefaults: {bash: allow}\n'] }, 'allow'],
    ['session overrides project', { project: ['version: 1\ndefaults: {bash: allow}\n'], session: ['version: 1\ndefaults: {bash: forbid}\n'] }, 'forbid'],
    ['two files of one layer: stricter holds', { global: ['version: 1\ndefaults: {bash: allow}\n', 'version: 1\ndefaults: {bash: prompt}\n'] }, 'prompt'],
    ['two files of one layer, other order', { project: ['version: 1\ndefaults: {bash: forbid}\n', 'version: 1\ndefaults: {bash: allow}\n'] }, 'forbid'],
    ['a layer that sets another tool does not count', { global: ['version: 1\ndefaults: {bash: allow}\n'], project: ['version: 1\ndefaults: {write: forbid}\n'] }, 'allow'],
  ])('bash default: %s', (_name, texts, decision) => {
    const e = evaluate(layersFrom(texts), bash('some-unknown-tool --flag'));
    expect(e.decision).toBe(decision);
    expect(e.matched_rules).toEqual([]);
    expect(e.reason).toMatch(/no rule matched/);
  });

  it.each<[ReturnType<typeof file>, Decision]>([
    [file('write', 'a.txt'), 'allow'],
    [file('append', 'a.txt'), 'allow'],
    [file('edit', 'a.txt'), 'allow'],
    [file('mkdir', 'a'), 'allow'],
    [file('touch', 'a'), 'allow'],
    [file('copy', 'a', 'b'), 'allow'],
    [file('read', 'a'), 'allow'],
  ])('built-in default for %j is %s', (command, decision) => {
    expect(evaluate(layersFrom({}), command).decision).toBe(decision);
  });

  it('a per-tool default applies to that tool only', () => {
    const l = layersFrom({ global: ['version: 1\ndefaults: {write: prompt, read: forbid}\n'] });
    expect(evaluate(l, file('write', 'a')).decision).toBe('prompt');
    expect(evaluate(l, file('read', 'a')).decision).toBe('forbid');
    expect(evaluate(l, file('append', 'a')).decision).toBe('allow');
  });

  it('a default is the fallback per simple command: a matched allow is not overridden by it', () => {
    const l = layersFrom({ global: [GLOBAL, 'version: 1\ndefaults: {bash: forbid}\n'] });
    expect(evaluate(l, bash('ls')).decision).toBe('allow');
    expect(evaluate(l, bash('ls && unknown')).decision).toBe('forbid');
  });
});
