// Issue 10's engine reproductions against the shipped policies (POLICY.md §7):
// each row was allowed or merely prompted before, and is refused now.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  decideApproval, evaluate, grantOptions, grantsFor, redirectFileOps, type Decision, type Grant, type PolicyStore, loadPolicyDir,
} from '../../../services/policy/index.ts';
import { bash, file } from './helpers.ts';

const DIR = fileURLToPath(new URL('../../../policies', import.meta.url));
let store: PolicyStore;
beforeAll(async () => {
  store = await loadPolicyDir(DIR);
});
const check = (cmd: string, grants: Grant[] = []) => evaluate(store.layers(), bash(cmd), grants);

describe('redirections are file operations', () => {
  it.each<[string, Decision, string[]]>([
    ['echo "[core] hooksPath = x" >> .git/config', 'forbid', ['protect-git-dir']],
    ['echo x > ./.git/hooks/pre-commit', 'forbid', ['protect-git-dir']],
    ['echo x > /workspace/.git/HEAD', 'forbid', ['protect-git-dir']],
    ['echo x &> .git/config', 'forbid', ['protect-git-dir']],
    ['echo x 2>> .git/config', 'forbid', ['protect-git-dir']],
    ['echo x >| .git/config', 'forbid', ['protect-git-dir']],
    ['echo x >& .git/config', 'forbid', ['protect-git-dir']],
    ['cd .git && echo x >> config', 'forbid', ['protect-git-dir']],
    ['cd src; cd ../.git; echo x > hooks/post-commit', 'forbid', ['protect-git-dir']],
    ['bash -c "echo x >> .git/config"', 'forbid', ['protect-git-dir']],
    ['cd /tmp && echo x > ../workspace/.git/config', 'forbid', ['protect-git-dir']],
    ['(echo x >> .git/config)', 'forbid', ['protect-git-dir']],
    ['echo x > out.txt', 'allow', []],
    ['ls 2>/dev/null', 'allow', []],
    ['ls > /tmp/list 2>&1', 'allow', []],
    ['ls >&2', 'allow', []],
    ['cat < README.md', 'allow', []],
  ])('%j → %s', (cmd, decision, rules) => {
    const e = check(cmd);
    expect(e.decision).toBe(decision);
    for (const r of rules) expect(e.matched_rules.map((m) => m.id)).toContain(r);
    if (decision === 'forbid') expect(e.reason).toMatch(/protect-git-dir/);
  });

  it.each([
    ['echo x > $OUT', /expansion in a redirection target/],
    ['echo x > .gi*/config', /pattern in a redirection target/],
    ['cd $D && echo x > config', /cd that cannot be followed/],
  ])('%j: a target that cannot be known from the text is complex', (cmd, reason) => {
    const e = check(cmd);
    expect(e.decision).toBe('prompt');
    expect(e.reason).toMatch(reason);
  });

  it('redirectFileOps lists the workspace files only (for the execution-time check)', () => {
    expect(redirectFileOps('sort < in.txt > out/x 2>&1 2>/dev/null >> /tmp/t; cat <> rw')).toEqual([
      { tool: 'read', path: 'in.txt' },
      { tool: 'write', path: 'out/x' },
      { tool: 'read', path: 'rw' },
      { tool: 'write', path: 'rw' },
    ]);
    expect(redirectFileOps('cd sub && echo > f')).toEqual([{ tool: 'write', path: 'f' }, { tool: 'write', path: 'sub/f' }]);
    expect(redirectFileOps('bash -c "echo x >> g/hooks/pre-commit"')).toEqual([{ tool: 'write', path: 'g/hooks/pre-commit' }]);
  });

  it('a file-tool command carrying the resolved path meets every path rule', () => {
    // The worker re-evaluates with the symlink-resolved path (g → .git).
    const resolved = evaluate(store.layers(), file('write', '/workspace/.git/hooks/pre-commit'));
    expect(resolved.decision).toBe('forbid');
    expect(resolved.matched_rules.map((r) => r.id)).toEqual(['protect-git-dir']);
    expect(evaluate(store.layers(), file('copy', 'a.txt', '/workspace/.git/config')).decision).toBe('forbid');
  });
});

describe('more that is complex, and unwrapping never loosens', () => {
  it.each<[string, Decision]>([
    ["$'\\x63url' http://x", 'forbid'], // ANSI-C quoting decodes to curl
    ["$'c\\165rl' x", 'forbid'],
    ['bash -c -- "curl http://x"', 'forbid'],
    ['sh -ec "curl http://x"', 'forbid'],
    ['bash -lc "wget y"', 'forbid'],
    ['env -S "curl x"', 'forbid'],
    ['LD_PRELOAD=/tmp/x.so curl x', 'forbid'],
    ['LD_PRELOAD=/tmp/evil.so ls', 'prompt'],
    ['GIT_EXTERNAL_DIFF=./evil.sh git diff', 'prompt'],
    ['GIT_DIR=/tmp/g git status', 'prompt'],
    ['PATH=/tmp/bin:$PATH; ls', 'prompt'],
    ['export GIT_EXTERNAL_DIFF=./x.sh; git diff', 'prompt'],
    ['hash -p /tmp/evil ls; ls', 'prompt'],
    ['echo curl x | bash', 'prompt'], // a shell reading stdin
    ['find . -exec curl x ";"', 'forbid'],
    ["xargs sh -c 'curl x'", 'forbid'],
    ['busybox wget http://x', 'forbid'],
    ['script -qc "curl x" /dev/null', 'forbid'],
    ['strace -f -e trace=all curl x', 'forbid'],
  ])('%j → %s', (cmd, decision) => {
    const e = check(cmd);
    expect(e.decision).toBe(decision);
    expect(decideApproval(e, 'on-request', bash(cmd), []).action).toBe(decision === 'forbid' ? 'refuse' : 'ask');
  });

  it('an environment prefix is shown to rules as env: the wrapper rule names it', () => {
    const e = check('LD_PRELOAD=/tmp/evil.so ls');
    expect(e.matched_rules.map((r) => r.id)).toContain('command-wrappers');
    expect(e.reason).toMatch(/leading variable assignment/);
  });
});

describe('grants are exact (§7)', () => {
  it('approving `bash build.sh` for the session does not let `bash -c "git push --force"` run', () => {
    const c = bash('bash build.sh');
    const e = check('bash build.sh');
    expect(e.decision).toBe('prompt');
    const grants = grantsFor(c, e);
    expect(grants).toEqual([{ tool: 'bash', argv: ['bash', 'build.sh'] }]);
    expect(check('bash build.sh', grants).decision).toBe('allow');
    const push = check('bash -c "git push --force"', grants);
    expect(push.decision).toBe('prompt');
    expect(decideApproval(push, 'never', bash('bash -c "git push --force"'), grants).action).toBe('refuse');
    // and bash's prefix is never offered
    const opts = grantOptions(c, e);
    expect(opts.options.map((o) => o.scope)).toEqual(['exact']);
    expect(opts.prefix_unavailable).toMatch(/`bash` names a shell, interpreter or wrapper/);
  });

  it('approving `git push origin main` does not cover `git push --force --mirror`', () => {
    const c = bash('git push origin main');
    const grants = grantsFor(c, check('git push origin main'));
    expect(check('git push origin main', grants).decision).toBe('allow');
    expect(check('git push --force --mirror', grants).decision).toBe('prompt');
    // No wider grant either: git runs what its options name (`git push --receive-pack=…`), like a wrapper.
    const options = grantOptions(c, check('git push origin main'));
    expect(options.options.map((o) => o.scope)).toEqual(['exact']);
    expect(options.prefix_unavailable).toMatch(/git/);
  });

  it('an old stored prefix grant naming a shell covers nothing', () => {
    expect(check('bash -c "git push --force"', [{ tool: 'bash', prefix: ['bash'] }]).decision).toBe('prompt');
  });

  it('a grant never satisfies a forbid', () => {
    const grants: Grant[] = [{ tool: 'bash', argv: ['curl', 'x'] }, { tool: 'write', path: '.git/config' }];
    expect(check('curl x', grants).decision).toBe('forbid');
    expect(check('echo x >> .git/config', grants).decision).toBe('forbid');
  });
});

describe('bash scripts are bounded (§7: no policy work blocks the event loop for long)', () => {
  it.each([
    ['echo ' + 'a'.repeat(40 * 1024), /script_too_large: 40965 characters \(at most 32768\)/],
    ['ls;'.repeat(300), /script_too_large: 300 separator, redirection and substitution characters \(at most 256\)/],
  ])('a script over the bounds is refused, naming the bound', (cmd, reason) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(e.reason).toMatch(reason);
  });

  it('the largest script within the bounds is decided in milliseconds', () => {
    const cmd = `${'ls;'.repeat(250)}echo ${'a '.repeat(15 * 1024)}`;
    const times: number[] = [];
    for (let k = 0; k < 5; k++) {
      const t0 = performance.now();
      expect(check(cmd).decision).toBe('allow');
      times.push(performance.now() - t0);
    }
    // ~4 ms on an idle machine; the best of five rides out a busy shared machine.
    expect(Math.min(...times)).toBeLessThan(40);
  });
});

describe('shipped global policy: whole-tree deletes and environment prefixes hold', () => {
  it.each([
    'rm -rf -- *', 'rm -rf ./.', 'rm -rfv .', 'rm -rf *', 'rm -r -f -- .', 'rm -fr -- ./*', 'rm -rf build .', 'rm -Rfv /workspace/',
    'rm --recursive --force --verbose ~', 'rm -rf .*',
  ])('%j is forbidden', (cmd) => {
    const e = check(cmd);
    expect(e.decision).toBe('forbid');
    expect(e.matched_rules.map((r) => r.id).some((id) => id.startsWith('no-whole-tree-delete'))).toBe(true);
  });

  it.each(['rm -rf build', 'rm -rf -- build', 'rm -rf ./dist', "rm -rf '*.log'"])('%j is an ordinary delete', (cmd) => {
    expect(check(cmd).decision).toBe('allow');
  });

  it.each(['LD_PRELOAD=/tmp/x.so ls', 'GIT_EXTERNAL_DIFF=./x.sh git diff', 'GIT_DIR=/tmp/g git log', 'LD_PRELOAD=/tmp/x.so npm test'])(
    '%j is never allowed (was: allowed as ls / git diff); under never it is refused',
    (cmd) => {
      const e = check(cmd);
      expect(e.decision).toBe('prompt');
      expect(e.matched_rules.map((r) => r.id)).toContain('command-wrappers');
      expect(decideApproval(e, 'never', bash(cmd), []).action).toBe('refuse');
    },
  );
});

// The second review of issue 10 (after the first fixes): each of these was
// `allow` or froze the service, and is refused now.
describe('second review: spellings that still walked around the rules', () => {
  it.each([
    ["echo ${x:-'}'} ; curl x ; echo \\'"],
    ['echo ${x:-{} ; curl x ; echo }'],
    ["echo ${x:-'}'} ; echo hook > .git/hooks/pre-commit ; echo \\'"],
  ])('a parameter expansion with an operator makes %j complex, never allowed', (cmd) => {
    const e = check(cmd);
    expect(e.decision).not.toBe('allow');
    expect(e.reason).toMatch(/complex/);
  });

  it('plain ${NAME} forms are still read as words', () => {
    expect(check('echo ${HOME} ${#PATH} ${1} ${@}').decision).toBe('allow');
  });

  it.each(['echo x >> /proc/self/cwd/.git/config', 'echo x >> //proc/self/root/workspace/.git/config', 'echo x > /dev/fd/3'])(
    'a redirection through a process link %j is complex, never allowed',
    (cmd) => {
      expect(check(cmd).decision).not.toBe('allow');
    },
  );

  it.each(['taskset 1 curl x', 'prlimit --nofile=10 curl x', 'numactl -N 0 wget x', 'faketime 2020-01-01 curl x'])('%j is forbid like the command it runs', (cmd) => {
    expect(check(cmd).decision).toBe('forbid');
  });
});

describe('a policy sent as YAML text is parsed within milliseconds or refused', () => {
  it('aliases are refused, and what is large is refused before it is parsed', async () => {
    const { parsePolicyDocument } = await import('../../../services/policy/index.ts');
    const aliases = `version: 1\na: &a [x, y]\n${Array.from({ length: 500 }, (_, i) => `k${i}: *a`).join('\n')}`;
    const huge = `version: 1\na: &a [x, y]\n${Array.from({ length: 100_000 }, (_, i) => `k${i}: *a`).join('\n')}`;
    for (const [text, reason] of [[aliases, /alias/i], [huge, /at most 8192/]] as const) {
      const t0 = performance.now();
      expect(() => parsePolicyDocument('job policy', text, 'session')).toThrow(reason);
      expect(performance.now() - t0).toBeLessThan(200); // 100k aliases took 298 s before
    }
    // Operator files (global/project layers) keep aliases.
    expect(parsePolicyDocument('global/x.yaml', 'version: 1\ndefaults: {write: &d allow, append: *d}\n', 'global').rules).toEqual([]);
  });
});

