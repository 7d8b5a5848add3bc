// Nothing one command leaves behind runs in a later one (issue 18): HOME is
// emptied before every command, no tool reads user or system configuration,
// git's code-running keys of fixed name are overridden from the environment,
// and the seccomp profile refuses io_uring. Each attack is also run with the
// protection removed inside the same test, so the test fails if the attack
// itself stops working (rather than passing for the wrong reason).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bash, newManager, reapAll, sandboxForFile, sessionId, testPrefix } from './helpers.ts';

const file = sandboxForFile('later');

const run = async (script: string) => {
  const r = await bash(file.sb, script);
  expect(r.error_code, `${script}\n${r.stderr}`).not.toBe('sandbox_broken');
  return r;
};
const ran = async (marker: string) => (await run(`test -e /workspace/${marker} && echo yes || echo no`)).stdout!.trim() === 'yes';

// Env of a command with every git protection of tool-config.mjs taken away.
const UNPROTECTED_GIT = 'env -u GIT_CONFIG_COUNT -u GIT_EDITOR -u GIT_SEQUENCE_EDITOR -u GIT_ASKPASS -u SSH_ASKPASS -u GIT_TERMINAL_PROMPT';

describe('HOME is empty at the start of every command', () => {
  it('files, unreadable directories, a deep chain and a chmod 000 HOME are all gone for the next command', async () => {
    const made = await run(
      'cd ~ && echo x > .npmrc && mkdir -p .config/git locked/in && echo y > locked/in/f && chmod 000 locked/in locked && ' +
        // Deeper than PATH_MAX, with its top made unreadable too.
        `python3 -c "import os; [(os.mkdir('c'), os.chdir('c')) for _ in range(3000)]" && chmod 000 c ~ && echo made`,
    );
    expect(made.stdout).toContain('made');
    const next = await run('ls -A ~ | wc -l; stat -c %a:%u ~; touch ~/new && echo writable');
    expect(next.stdout!.trim().split('\n')).toEqual(['0', '700:1000', 'writable']);
  });

  it('with no HOME tmpfs configured, HOME stays on the read-only root and commands run', async () => {
    const roPrefix = testPrefix('later-ro');
    const ro = newManager(roPrefix, { tmpfs: { '/tmp': 'rw,nosuid,nodev,size=16m,mode=1777' } });
    try {
      const r = await bash(await ro.sandboxFor(sessionId()), 'touch ~/x 2>&1; echo ran');
      expect(r.stdout).toMatch(/Read-only file system\nran/);
    } finally {
      await reapAll(ro, roPrefix);
    }
  });

  it('XDG directories point inside that HOME', async () => {
    const r = await run('echo "$XDG_CONFIG_HOME $XDG_DATA_HOME $XDG_STATE_HOME $XDG_CACHE_HOME"');
    expect(r.stdout!.trim()).toBe('/home/sandbox/.config /home/sandbox/.local/share /home/sandbox/.local/state /home/sandbox/.cache');
  });
});

describe('a Python user-site .pth', () => {
  const USER_SITE = 'python3 -c "import site; print(site.getusersitepackages())"';
  it('written by one command runs in no later python3 (and would run without the protections)', async () => {
    const pth = "import os; open('/workspace/pth-ran', 'a').write('x')";
    const setup = await run(
      `site=$(${USER_SITE}) && mkdir -p "$site" && echo "${pth}" > "$site/evil.pth" && ` +
        // In the same command: ignored with PYTHONNOUSERSITE, run without it.
        'python3 -c pass && test ! -e /workspace/pth-ran && echo ignored; env -u PYTHONNOUSERSITE python3 -c pass; cat /workspace/pth-ran',
    );
    expect(setup.stdout!.trim()).toBe('ignored\nx');
    await run('rm /workspace/pth-ran');
    // The next command: the file is gone with HOME, and even an unprotected python finds nothing.
    const later = await run('python3 -c "print(42)"; env -u PYTHONNOUSERSITE python3 -c pass; ls "$(${USER_SITE})" 2>&1 | head -1');
    expect(later.stdout).toMatch(/^42\n.*No such file or directory/);
    expect(await ran('pth-ran')).toBe(false);
  });
});

describe('user configuration of git and npm', () => {
  it('a ~/.gitconfig alias written by one command does not apply in a later command', async () => {
    const setup = await run(
      "printf '[alias]\\n\\tzz = !touch /workspace/alias-ran\\n' > ~/.gitconfig && git zz 2>/dev/null; " +
        'test -e /workspace/alias-ran && echo applied; env -u GIT_CONFIG_GLOBAL git zz && test -e /workspace/alias-ran && echo applied-unprotected',
    );
    expect(setup.stdout!.trim()).toBe('applied-unprotected');
    await run('rm /workspace/alias-ran');
    const later = await run('git zz; env -u GIT_CONFIG_GLOBAL git zz; test -e ~/.gitconfig || echo gone');
    expect(later.stderr).toContain("'zz' is not a git command");
    expect(later.stdout!.trim()).toBe('gone');
    expect(await ran('alias-ran')).toBe(false);
  });

  it('git --global and npm user config cannot be written, and ~/.npmrc is not read', async () => {
    const r = await run(
      'git config --global alias.x status; echo "git=$?"; echo loglevel=silly > ~/.npmrc; ' +
        'echo "npm=$(npm config get loglevel) unprotected=$(env -u NPM_CONFIG_USERCONFIG npm config get loglevel)"',
    );
    expect(r.stdout).toContain('git=255');
    expect(r.stderr).toMatch(/could not lock config file \/etc\/thinkflow\/empty/);
    expect(r.stdout).toContain('npm=notice unprotected=silly');
    expect((await run('cat /etc/thinkflow/empty | wc -c')).stdout!.trim()).toBe('0');
  });
});

describe('a repository .git/config written by one command', () => {
  beforeAll(async () => {
    const r = await run(
      'git init -q repo && cd repo && git config user.name t && git config user.email t@example.com && ' +
        "echo a > f && git add f && git commit -qm one && echo b >> f && printf '#!/bin/sh\\ntouch /workspace/$1\\n' > /workspace/mark && chmod +x /workspace/mark",
    );
    expect(r.ok, r.stderr).toBe(true);
  });

  // Each case: a config (written in its own command), a later trigger, and the marker that shows code ran.
  const cases = [
    { name: 'core.fsmonitor on git status', setup: 'git config core.fsmonitor "/workspace/mark fsm-ran;:"', trigger: 'git status --short', marker: 'fsm-ran' },
    {
      name: 'core.hooksPath on git commit',
      setup: 'mkdir -p ../hooks && printf "#!/bin/sh\\n/workspace/mark hook-ran\\n" > ../hooks/pre-commit && chmod +x ../hooks/pre-commit && git config core.hooksPath "$PWD/../hooks"',
      trigger: 'git commit -q --allow-empty -m x',
      marker: 'hook-ran',
    },
    { name: '.git/hooks on git commit', setup: 'git config --unset core.hooksPath && printf "#!/bin/sh\\n/workspace/mark githook-ran\\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit', trigger: 'git commit -q --allow-empty -m y', marker: 'githook-ran' },
    { name: 'core.editor on git commit without -m', setup: 'git config core.editor "/workspace/mark editor-ran;:"', trigger: 'git commit -q --allow-empty', marker: 'editor-ran' },
    { name: 'credential.helper', setup: 'git config credential.helper "!/workspace/mark helper-ran;:"', trigger: "printf 'protocol=https\\nhost=example.com\\n\\n' | git credential fill", marker: 'helper-ran' },
    {
      name: 'core.askPass',
      setup: 'printf "#!/bin/sh\\n/workspace/mark askpass-ran\\n" > ../askpass && chmod +x ../askpass && git config core.askPass "$PWD/../askpass"',
      trigger: "printf 'protocol=https\\nhost=example.org\\n\\n' | git -c credential.helper= credential fill",
      marker: 'askpass-ran',
    },
    { name: 'protocol.ext.allow', setup: 'git config protocol.ext.allow always', trigger: "git ls-remote 'ext::/workspace/mark ext-ran'", marker: 'ext-ran' },
  ];

  it.each(cases)('$name: runs nothing in a later command (and does run with the protections removed)', async ({ setup, trigger, marker }) => {
    expect((await run(`cd repo && ${setup}`)).ok).toBe(true);
    await run(`cd repo && ${trigger}`);
    expect(await ran(marker)).toBe(false);
    await run(`cd repo && ${UNPROTECTED_GIT} bash -c ${JSON.stringify(trigger)}`);
    expect(await ran(marker)).toBe(true);
    await run(`rm -f /workspace/${marker}`);
  });

  it('ordinary git work still works with the protections', async () => {
    const r = await run(
      'cd repo && git status --short && git diff --stat | tail -1 && git commit -qam two && git log --oneline | wc -l && ' +
        'git checkout -qb feat && git commit -q --allow-empty -m three && git checkout -q - && git merge -q feat && git rebase -q -i HEAD~1 && echo done',
    );
    expect(r.stderr).toBe('');
    expect(r.stdout!.trimEnd().split('\n')).toEqual([' M f', ' 1 file changed, 1 insertion(+)', expect.stringMatching(/^\d+$/), 'done']);
  });
});

describe('seccomp', () => {
  const IO_URING = `python3 -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(425, 8, ctypes.create_string_buffer(120))  # io_uring_setup on x86_64
print(r, os.strerror(ctypes.get_errno()) if r < 0 else 'fd')"`;
  const dockerDefaultPrefix = testPrefix('later-dflt');
  const dockerDefault = newManager(dockerDefaultPrefix, { seccompProfile: 'default' });
  afterAll(() => reapAll(dockerDefault, dockerDefaultPrefix));

  it.runIf(process.arch === 'x64')('io_uring_setup fails with EPERM in a sandbox, and succeeds under Docker\'s own default profile', async () => {
    expect((await run(IO_URING)).stdout!.trim()).toBe('-1 Operation not permitted');
    expect((await run("grep '^Seccomp:' /proc/self/status")).stdout).toMatch(/Seccomp:\s+2/);
    const r = await bash(await dockerDefault.sandboxFor(sessionId()), IO_URING);
    expect(r.stdout!.trim()).toMatch(/^\d+ fd$/);
  });
});
