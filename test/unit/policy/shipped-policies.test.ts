// The default set in policies/ must load (its examples are checked on load)
// and must say what the issue asks for unattended agent work.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, evaluate, loadPolicyDir, type Decision, type PolicyStore } from '../../../services/policy/index.ts';
import { bash, file } from './helpers.ts';

const DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
let store: PolicyStore;
beforeAll(async () => {
  store = await loadPolicyDir(DIR);
});

describe('policies/global', () => {
  it.each<[string, Decision]>([
    ['ls -la', 'allow'],
    ['cat package.json', 'allow'],
    ['grep -rn TODO src', 'allow'],
    ['find . -name "*.ts"', 'allow'],
    ['git status', 'allow'],
    ['git diff HEAD~1', 'allow'],
    ['git log --oneline -n 5', 'allow'],
    ['npm test', 'allow'],
    ['npm run build', 'allow'],
    ['node dist/index.js', 'allow'],
    ['python3 -m pytest -q', 'allow'],
    ['pytest tests', 'allow'],
    ['make -j2', 'allow'],
    ['npx tsc --noEmit', 'allow'],
    ['tsc -p .', 'allow'],
    ['npm install', 'prompt'],
    ['npm i lodash', 'prompt'],
    ['pip install requests', 'prompt'],
    ['python3 -m pip install requests', 'prompt'],
    ['apt-get install -y jq', 'prompt'],
    ['git push --force origin main', 'prompt'],
    ['git rebase -i HEAD~2', 'prompt'],
    ['git reset --hard HEAD~1', 'prompt'],
    ['git add -A && git commit -m "wip"', 'allow'],
    ['git commit --amend --no-edit', 'prompt'],
    ['git branch -D old', 'prompt'],
    ['git clean -fdx', 'prompt'],
    ['bash -c "ls"', 'prompt'],
    ['bash -c "curl x"', 'forbid'],
    ['env FOO=1 wget x', 'forbid'],
    ['timeout 5 npm test', 'prompt'],
    ['find . -name "*.log" | xargs rm', 'prompt'],
    ['curl https://example.com', 'forbid'],
    ['wget x', 'forbid'],
    ['ssh host', 'forbid'],
    ['sudo ls', 'forbid'],
    ['su root', 'forbid'],
    ['rm -rf /', 'forbid'],
    ['rm -rf ~', 'forbid'],
    ['rm -rf .', 'forbid'],
    ['rm -r -f /', 'forbid'],
    ['rm -rf build', 'allow'],
    ['git status && rm -rf /', 'forbid'],
    ['npm test | tee log.txt', 'allow'],
    ['echo $(whoami)', 'prompt'],
    ['echo $(curl x)', 'forbid'],
    ['unknown-program', 'prompt'],
  ])('%j → %s', (cmd, decision) => {
    expect(evaluate(store.layers(), bash(cmd)).decision).toBe(decision);
  });

  it.each<[ReturnType<typeof file>, Decision]>([
    [file('write', '.git/config'), 'forbid'],
    [file('write', '.git'), 'forbid'],
    [file('edit', '.git/HEAD'), 'forbid'],
    [file('write', 'src/index.ts'), 'allow'],
    [file('read', '.git/config'), 'allow'],
    [file('write', '.github/workflows/ci.yml'), 'allow'],
  ])('%j → %s', (command, decision) => {
    expect(evaluate(store.layers(), command).decision).toBe(decision);
  });

  it('every shipped rule carries examples (checked at load)', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const { parse } = await import('yaml');
    const files = [
      ...(await readdir(`${DIR}/global`)).map((f) => `${DIR}/global/${f}`),
      ...(await readdir(`${DIR}/projects/example`)).map((f) => `${DIR}/projects/example/${f}`),
    ].filter((f) => f.endsWith('.yaml'));
    let rules = 0;
    for (const f of files) {
      for (const r of (parse(await readFile(f, 'utf8')) as { rules?: { id: string; examples?: { match?: unknown[] } }[] }).rules ?? []) {
        rules++;
        expect(r.examples?.match?.length ?? 0, `${f} ${r.id}`).toBeGreaterThan(0);
      }
    }
    expect(rules).toBeGreaterThan(20);
  });

  it('every global rule carries a justification', () => {
    const rules = store.global.flatMap((f) => f.rules);
    expect(rules.length).toBeGreaterThan(10);
    for (const r of rules) expect(r.justification, r.id).not.toBe('');
  });

  it('unattended (never) jobs never wait: a prompt is refused at once', () => {
    const c = bash('npm install');
    expect(decideApproval(evaluate(store.layers(), c), 'never', c, [])).toEqual({
      action: 'refuse',
      reason: 'approval required by policy, but approval mode is never',
    });
  });
});

describe('policies/projects/example', () => {
  it.each<[ReturnType<typeof bash> | ReturnType<typeof file>, Decision]>([
    [bash('npm install'), 'prompt'], // the project's allow cannot loosen the global prompt
    [bash('curl x'), 'forbid'],
    [bash('terraform apply'), 'prompt'],
    [bash('terraform fmt'), 'allow'],
    [file('write', 'secrets/db.txt'), 'forbid'],
    [file('write', 'app/.env'), 'forbid'],
    [file('write', 'src/generated/api.ts'), 'prompt'],
    [file('write', 'src/generated/README.md'), 'allow'],
  ])('%j → %s', (command, decision) => {
    expect(evaluate(store.layers('example'), command).decision).toBe(decision);
  });
});
