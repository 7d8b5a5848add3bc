import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluate, loadPolicyDir, parsePolicyDocument, PolicyLoadError, UnknownProjectError } from '../../../services/policy/index.ts';
import { bash } from './helpers.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function policyDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tf-policy-'));
  dirs.push(dir);
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), text);
  }
  return dir;
}

const OK = 'version: 1\nrules:\n  - {id: ls, tool: bash, command: [ls], decision: allow}\n';

describe('loadPolicyDir', () => {
  it('reads global/ and projects/<name>/ into their layers', async () => {
    const dir = await policyDir({
      'global/a.yaml': OK,
      'projects/web/p.yml': 'version: 1\nrules:\n  - {id: no-ls, tool: bash, command: [ls], decision: prompt}\n',
      'projects/empty/README.md': 'not a policy',
      'README.md': 'ignored',
    });
    const store = await loadPolicyDir(dir);
    expect(evaluate(store.layers(), bash('ls')).decision).toBe('allow');
    expect(evaluate(store.layers('empty'), bash('ls')).decision).toBe('allow');
    const e = evaluate(store.layers('web'), bash('ls'));
    expect(e.decision).toBe('prompt');
    expect(e.matched_rules.map((r) => `${r.layer}:${r.id}`)).toEqual(['global:ls', 'project:no-ls']);
  });

  it('reuses indexed layers for the same project and session files', async () => {
    const store = await loadPolicyDir(await policyDir({ 'global/a.yaml': OK, 'projects/web/p.yaml': OK }));
    const session = [parsePolicyDocument('s', { rules: [{ id: 'no-ls', tool: 'bash', command: ['ls'], decision: 'forbid' }] }, 'session')];
    expect(store.layers('web')).toBe(store.layers('web'));
    expect(store.layers()).not.toBe(store.layers('web'));
    expect(store.layers('web', session)).toBe(store.layers('web', session));
    expect(store.layers('web', session)).not.toBe(store.layers('web'));
    expect(evaluate(store.layers('web', session), bash('ls')).decision).toBe('forbid');
    expect(evaluate(store.layers('web'), bash('ls')).decision).toBe('allow');
  });

  it('an unknown project is an error', async () => {
    const store = await loadPolicyDir(await policyDir({ 'global/a.yaml': OK, 'projects/web/p.yaml': OK }));
    expect(() => store.layers('nope')).toThrow(UnknownProjectError);
    expect(() => store.layers('nope')).toThrow(PolicyLoadError);
    expect(() => store.layers('../global')).toThrow(/unknown project '\.\.\/global' \(known: web\)/);
  });

  it.each([
    ['a bad global file', 'global/z.yaml'],
    ['a bad file of an unused project', 'projects/other/x.yaml'],
    ['a bad file outside the layers', 'drafts/x.yaml'],
  ])('%s stops the whole load, naming the file and the rule', async (_name, rel) => {
    const dir = await policyDir({
      'global/a.yaml': OK,
      [rel]: 'version: 1\nrules:\n  - {id: bad, tool: bash, command: [git], decision: allow, examples: {not_match: ["git push"]}}\n',
    });
    const err = await loadPolicyDir(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as Error).message).toBe(
      `${join(dir, rel)}: rules[0] (bad): example "git push" is listed in not_match but the rule matches it`,
    );
  });

  it('reports every bad file, one per line', async () => {
    const dir = await policyDir({ 'global/a.yaml': 'version: 1\nrules: [\n', 'global/b.yaml': 'version: 1\nextra: 1\n' });
    const err = (await loadPolicyDir(dir).catch((e: unknown) => e)) as Error;
    const lines = err.message.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/a\.yaml: YAML error/);
    expect(lines[1]).toMatch(/b\.yaml: Unrecognized key: "extra"/);
  });

  it('a missing directory is an error', async () => {
    await expect(loadPolicyDir('/nonexistent/policies')).rejects.toThrow(/policy directory not found/);
  });
});

describe('loadPolicyDir: symlinks', () => {
  it('follows symlinked files and folders (ConfigMap-style mounts), and reports dangling links', async () => {
    const { symlink } = await import('node:fs/promises');
    const real = await policyDir({ 'store/forbid-ls.yaml': 'version: 1\nrules:\n  - {id: no-ls, tool: bash, command: [ls], decision: forbid}\n', 'store/p/x.yaml': OK });
    const dir = await policyDir({});
    await mkdir(join(dir, 'global'));
    await mkdir(join(dir, 'projects'));
    await symlink(join(real, 'store/forbid-ls.yaml'), join(dir, 'global/link.yaml'));
    await symlink(join(real, 'store/p'), join(dir, 'projects/linked'));
    await symlink(dir, join(dir, 'projects/loop')); // a loop must not hang the walk
    const store = await loadPolicyDir(dir);
    expect(evaluate(store.layers(), bash('ls')).decision).toBe('forbid');
    expect(store.projects.get('linked')).toHaveLength(1);
    await symlink(join(real, 'missing.yaml'), join(dir, 'global/dangling.yaml'));
    await expect(loadPolicyDir(dir)).rejects.toThrow(/dangling\.yaml/);
  });
});
