// Issue 18, second attack round (h9): spellings the path-aware descriptors
// did not read. `rm -rf ?*` deletes every non-dot entry of the workspace like
// `rm -rf *`; `git diff|log|show --output=F` (allowed as read-only git) and
// `sort -o F` / `uniq IN OUT` (allowed as inspection) write F, so they wrote
// `.git/config` with content of the submitter's choosing (`git log
// --format=...`) under the shipped policies in `never` mode; `tree -o F`
// likewise, and `gzip`/`gunzip` replaced `.git/config` by its twin.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, evaluate, loadPolicyDir, type Decision, type PolicyStore } from '../../../services/policy/index.ts';
import { bash } from './helpers.ts';

const DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
let store: PolicyStore;
beforeAll(async () => {
  store = await loadPolicyDir(DIR);
});
const check = (cmd: string) => evaluate(store.layers(), bash(cmd), []);

describe('shipped policies (h9): whole-tree deletes spelled with ? wildcards', () => {
  it.each(['rm -rf ?*', 'rm -rf *?', 'rm -rf ./?*', 'rm -rf src/../?*', 'rm -r -f -- *?*', 'rm -rf ??*'])('%j → forbid, refused in never', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(decideApproval(e, 'never', bash(cmd), []).action).toBe('refuse');
  });

  it.each<[string, Decision]>([['rm -rf build/?*', 'allow'], ['rm -f ?.o', 'allow'], ['rm -rf *.o', 'allow']])('%j → %s', (cmd, d) => {
    expect(check(cmd).decision).toBe(d);
  });
});

describe('shipped policies (h9): output files of "read-only" commands are writes', () => {
  it.each([
    'git diff --output=.git/config', 'git diff --output .git/config', 'git log --format=x --output=.git/config',
    'git show --output=.git/hooks/pre-commit HEAD', 'git diff --stat --output=./.git/config HEAD',
    'sort -o .git/config x', 'sort --output=.git/config x', 'sort -uo.git/config x', 'sort -n -o .git/info/exclude x',
    'uniq x .git/config', 'uniq -c x .git/config', 'cd .git && sort -o config ../x', 'tree -o .git/config', 'tree -a -L 1 -o .git/hooks/x',
    'gzip .git/config', 'gunzip .git/config.gz', 'gzip -r .git', 'gzip -9 .git/index',
  ])('%j → forbid, refused in never', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(e.reason).toMatch(/protect-git-dir/);
    expect(decideApproval(e, 'never', bash(cmd), []).action).toBe('refuse');
  });

  it.each<[string, Decision]>([
    ['git diff', 'allow'], ['git diff --stat HEAD~1', 'allow'], ['git log --oneline', 'allow'], ['git diff --output=changes.patch', 'allow'],
    ['sort -k2 -n data.txt', 'allow'], ['sort -o sorted.txt data.txt', 'allow'], ['sort -t, -k1,1 x', 'allow'], ['uniq -c x', 'allow'],
    ['uniq x out.txt', 'allow'], ['sort -n x | uniq -c', 'allow'],
    ['tree -L 2 src', 'allow'], ['gzip -k dist/app.js', 'allow'], ['gzip -c .git/config', 'allow'], ['gunzip logs/a.gz', 'allow'],
  ])('%j → %s', (cmd, d) => {
    expect(check(cmd).decision).toBe(d);
  });
});

describe('shipped policies: `git rm -r .` empties the workspace like `rm -rf .`', () => {
  it.each(['git rm -r .', 'git rm -rf -- .', 'git rm -r -q ./', 'git rm .git/config'])('%j → forbid, refused in never', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(decideApproval(e, 'never', bash(cmd), []).action).toBe('refuse');
  });

  it.each<[string, Decision]>([['git rm old.txt', 'allow'], ['git rm -r src', 'allow'], ['git rm -r --cached .', 'allow']])('%j → %s', (cmd, d) => {
    expect(check(cmd).decision).toBe(d);
  });
});
