// Issue 18: path arguments of file commands are writes, checked against the
// shipped policies loaded from policies/. Each forbid row passed (allow) on
// the main branch before this change.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkFileCommandExamples, decideApproval, evaluate, FILE_COMMANDS, grantsFor, loadPolicyDir, type Decision, type Grant, type PolicyStore,
} from '../../../services/policy/index.ts';
import { compileReachMatcher } from '../../../services/policy/glob.ts';
import { bash, layersFrom } from './helpers.ts';

const DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
let store: PolicyStore;
beforeAll(async () => {
  store = await loadPolicyDir(DIR);
});
const check = (cmd: string, grants: Grant[] = []) => evaluate(store.layers(), bash(cmd), grants);

describe('descriptors carry examples, and every one holds', () => {
  it('checkFileCommandExamples finds nothing wrong, and every descriptor has examples', () => {
    expect(checkFileCommandExamples()).toEqual([]);
    for (const d of FILE_COMMANDS) expect(d.examples.length, d.programs.join(',')).toBeGreaterThan(0);
  });

  it('a wrong example is reported (the check can fail)', () => {
    const rm = FILE_COMMANDS.find((d) => d.programs.includes('rm'))!;
    const bad = { ...rm, examples: [['rm -rf .', ['self:.']], ['rm x', 'complex']] as const };
    expect(checkFileCommandExamples([bad])).toEqual([
      'rm: "rm -rf ." reads as ["tree:."], expected ["self:."]',
      'rm: "rm x" reads as ["self:x"], expected complex',
    ]);
  });
});

describe('shipped policies: writes into .git through file commands are forbidden in every mode', () => {
  it.each([
    'mv config.new .git/config', 'mv x .git/hooks/pre-commit', 'mv .git old', 'cp x .git/config', 'cp -r hooks .git/', 'cp -t .git/hooks pre-commit',
    'tee -a .git/config', 'sed -i "s/fsmonitor = false/fsmonitor = .\\/x.sh/" .git/config', 'sed --in-place=.bak -e s/a/b/ .git/config',
    'sed -i.bak s/a/b/ .git/config', 'sed -Ei s/a/b/ .git/config', 'tar -xf payload.tar -C .git', 'tar xf payload.tar --directory=.git/hooks',
    'tar -x -f p.tar -C ./.git', 'unzip -o p.zip -d .git', 'find . -name x -fprint .git/hooks/pre-commit', 'find . -fprintf .git/config "%p"',
    'find . -fls .git/info/exclude', 'chmod +x .git/hooks/pre-commit', 'chmod -R 777 .git', 'chown -R 1:1 .git', 'ln -sf ../../x.sh .git/hooks/pre-commit',
    'truncate -s 0 .git/index', 'dd if=x of=.git/config', 'install -m 755 hook .git/hooks/post-checkout', 'git init --template=./tpl',
    'rm .git/index', 'rm -rf .git/hooks', 'mkdir -p .git/hooks', 'touch .git/hooks/x', 'rmdir .git/refs/tags',
    'cd .git && sed -i s/a/b/ config', 'cd src && mv x ../.git/config', 'env mv x .git/config', 'bash -c "tee .git/config"', 'nice cp x /workspace/.git/config',
    'echo ok && cp x .git/config', 'find . -name "*.sh" -exec cp {} .git/hooks/ \\;',
  ])('%j → forbid', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(e.reason).toMatch(/protect-git-dir|no-whole-workspace-write/);
    for (const mode of ['never', 'on-request'] as const) expect(decideApproval(e, mode, bash(cmd), []).action).toBe('refuse');
  });

  it('a session grant for the path never turns the forbid into a run', () => {
    const cmd = 'mv x .git/config';
    const grants: Grant[] = [{ tool: 'write', path: '.git/config' }, { tool: 'bash', argv: ['mv', 'x', '.git/config'] }];
    expect(decideApproval(check(cmd, grants), 'on-request', bash(cmd), grants).action).toBe('refuse');
  });
});

describe('shipped policies: whole-tree deletes are forbidden in any spelling', () => {
  it.each([
    'rm -rf $PWD', 'rm -rf "$PWD"', 'rm -rf ${PWD}', 'rm -rf "${PWD}/"', 'rm -rf .', 'rm -rf ./', 'rm -rf -- *', 'rm -rf ./*', 'rm -rf ~', 'rm -rf /',
    'find . -delete', 'find . -mindepth 1 -delete', 'find -delete', 'find /workspace -depth -delete', 'rm -r -f .', 'rm --recursive --force /workspace',
    'cd .. && rm -rf workspace', 'cd .. && rm -rf /workspace', 'cd / && rm -rf workspace', 'rm -rf src/..', 'rm -v -r -f -i -- ./*', 'rm -rf build dist . src',
    'rm -R -f -v -- "$PWD"', 'mv . ../elsewhere', 'mv /workspace /tmp/x', 'find $PWD -delete', 'rm -rf ./src/../.', 'bash -c "rm -rf \\$PWD"',
    'find . -mindepth 1 -maxdepth 1 -exec rm -rf {} + ; rm -rf .',
  ])('%j → forbid', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    for (const mode of ['never', 'on-request'] as const) expect(decideApproval(e, mode, bash(cmd), []).action).toBe('refuse');
  });
});

describe('shipped policies: what the text cannot pin down prompts; ordinary file work stays allowed', () => {
  it.each<[string, Decision, RegExp?]>([
    ['rm -rf $DIR', 'prompt', /expansion in a path argument of rm/],
    ['rm -rf "$(pwd)"', 'prompt'],
    ['find . -name "*.pyc" -delete', 'prompt', /unknown entries under \., some of which rule protect-git-dir may cover/],
    ['tar -xf vendor.tar', 'prompt', /unknown entries under \./],
    ['unzip x.zip', 'prompt'],
    ['rm -Z x', 'prompt', /rm option '-Z' is not understood/],
    ['tar -xf a.tar --to-command=sh', 'prompt', /not understood/],
    ['find . -frobnicate', 'prompt', /primary '-frobnicate'/],
    ['chmod 755 -R src', 'prompt', /option after the mode/],
    ['cp a {b,c}', 'prompt', /brace expansion/],
    // …but what can be read still counts: a forbid is never lost to an unknown word.
    ['chmod 755 -R .git', 'forbid'],
    ['cp {a,b} .git/', 'forbid'],
    ['find . -name x -exec rm {} +', 'prompt', /placeholder/],
    ['rm -rf build', 'allow'],
    ['rm -rf ./dist node_modules', 'allow'],
    ['rm -f *.o', 'allow'],
    ['rm -f src/*.tmp', 'allow'],
    ['cp a.txt b.txt', 'allow'],
    ['cp -r src/ backup/', 'allow'],
    ['mv old.ts new.ts', 'allow'],
    ['mkdir -p src/lib && touch src/lib/index.ts', 'allow'],
    ['sed -i "s/a/b/" src/index.ts', 'allow'],
    ['sed -n 1,10p .git/config', 'allow'],
    ['tar -czf dist.tgz dist', 'allow'],
    ['tar -xf vendor.tar -C vendor', 'allow'],
    ['chmod +x scripts/run.sh', 'allow'],
    ['npm test | tee test.log', 'allow'],
    ['find . -name "*.ts"', 'allow'],
    ['find build -delete', 'allow'],
    ['ln -s ../shared lib/shared', 'allow'],
    ['cat .git/config', 'allow'],
    ['git init', 'allow'],
  ])('%j → %s', (cmd, decision, reason) => {
    const e = check(cmd);
    expect(e.decision).toBe(decision);
    if (reason) expect(e.reason).toMatch(reason);
  });

  it('a prompting path argument can be granted for the session like a redirection', () => {
    const layers = layersFrom({ global: ['version: 1\nrules:\n  - {id: mv, tool: bash, command: [mv], decision: allow}\n  - {id: ask-docs, tool: write, path: "docs/**", decision: prompt}\n'] });
    const cmd = bash('mv draft.md docs/final.md');
    const e = evaluate(layers, cmd);
    expect(e.decision).toBe('prompt');
    const grants = grantsFor(cmd, e);
    // `docs/final.md` may be a directory: `docs/final.md/draft.md` is written then.
    expect(grants).toEqual([{ tool: 'write', path: 'docs/final.md' }, { tool: 'write', path: 'docs/final.md/draft.md' }]);
    expect(decideApproval(evaluate(layers, cmd, grants), 'never', cmd, grants).action).toBe('run');
  });
});

describe('compileReachMatcher: can a path under a directory match a glob', () => {
  it.each<[string, string, boolean, boolean]>([
    ['.git/**', '.', true, true],
    ['.git/**', '.', false, false], // `rm *` cannot reach a dot entry
    ['.git/**', '.git', false, true],
    ['.git/**', 'src', true, false],
    ['**/secret', 'a/b', false, true],
    ['src/*.ts', 'src', false, true],
    ['src/*.ts', 'src/x', true, false],
    ['{a,b}/x', '.', false, true],
    ['..', '.', true, false],
  ])('%s under %s (dot entries: %s) → %s', (glob, dir, dotOk, want) => {
    expect(compileReachMatcher(glob)(dir, dotOk)).toBe(want);
  });
});
