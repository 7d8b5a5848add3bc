// The boundary inside the container (issue 9): a command cannot reach the
// executor, outlive itself, forge results, race the file views, or leave
// start-up files that run later. Each test replays an attack that worked
// when commands ran under the executor's own uid.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandFromToolCall } from '../../../services/agent/native-tools.ts';
import { FLOWS } from '../../../services/agent/flows.ts';
import { containerName, type Sandbox, type SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, cmd, dockerExecRoot, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';
import { SANDBOX_SOURCES, sandboxFrom } from './sandbox-source.ts';

const prefix = testPrefix('iso');
let manager: SandboxManager;
let sb: Sandbox;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
});
afterAll(() => reapAll(manager, prefix));

/** The executor's pid, seen from inside (the only node process when no command runs node). */
const executorPid = async () => (await bash(sb, 'pgrep -x node')).stdout!.trim();
/** Processes of the command user other than the probing command itself. */
const strays = async () => (await bash(sb, 'ps -U 1000 -o pid=,comm= | grep -v -e " ps$" -e " bash$" -e " grep$" || true')).stdout!.trim();

describe.each(SANDBOX_SOURCES)('on a %s sandbox', (source) => {
  let closeSource = async () => {};
  beforeAll(async () => {
    ({ sb, close: closeSource } = await sandboxFrom(source, manager, prefix));
  });
  afterAll(() => closeSource());

  describe('the executor is out of reach of commands', () => {
    it('cannot open, list or read the executor\'s /proc entries', async () => {
      const pid = await executorPid();
      expect(pid).toMatch(/^\d+$/);
      for (const probe of [`ls /proc/${pid}/fd`, `cat /proc/${pid}/environ`, `echo x > /proc/${pid}/fd/1`, `cat /proc/${pid}/fd/0`, `ls /proc/1/fd`]) {
        const r = await bash(sb, probe);
        expect(r.ok, probe).toBe(false);
        expect(r.stderr, probe).toMatch(/Permission denied/);
      }
    });

    it('cannot signal or ptrace the executor or tini', async () => {
      const pid = await executorPid();
      for (const target of [pid, '1']) {
        for (const sig of ['STOP', 'KILL', '0']) {
          const r = await bash(sb, `kill -${sig} ${target}`);
          expect(r.ok, `kill -${sig} ${target}`).toBe(false);
          expect(r.stderr).toMatch(/Operation not permitted/);
        }
        const trace = await bash(
          sb,
          `python3 -c "import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); r=l.ptrace(16,${target},0,0); print(r, ctypes.get_errno())"`,
        );
        expect(trace.stdout!.trim()).toBe('-1 1'); // EPERM
      }
      expect(await bash(sb, 'echo still-answering')).toMatchObject({ ok: true, stdout: 'still-answering\n' });
    });

    it('finds no descriptor that reaches the host channel, and has no capability', async () => {
      // The executor inherits tini's stdio, which is the attach stream to the host.
      const channel = (await dockerExecRoot(containerName(prefix, sb.sessionId), 'readlink /proc/1/fd/0 /proc/1/fd/1 /proc/1/fd/2'))
        .trim()
        .split('\n');
      expect(channel).toHaveLength(3);
      for (const end of channel) expect(end).toMatch(/^pipe:\[\d+\]$/);
      const seen = (await bash(sb, 'for f in /proc/[0-9]*/fd/*; do readlink "$f"; done 2>/dev/null | sort -u')).stdout!;
      for (const end of channel) expect(seen.split('\n')).not.toContain(end);
      const caps = (await bash(sb, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | awk '{print $2}' | sort -u")).stdout!.trim();
      expect(caps).toBe('0000000000000000');
    });

    it('a 600 MiB flood leaves the service memory flat and other sessions working', async () => {
      const other = await manager.sandboxFor(sessionId());
      await bash(other, 'true');
      global.gc?.();
      const before = process.memoryUsage().rss;
      const pid = await executorPid();
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      const flood = bash(sb, `head -c 600M /dev/zero > /proc/${pid}/fd/1; head -c 600M /dev/zero | tr '\\0' a; head -c 600M /dev/zero >&2`, { timeout: 60 });
      const meanwhile = await bash(other, 'echo other-session-fine');
      const r = await flood;
      clearInterval(sampler);
      expect(meanwhile).toMatchObject({ ok: true, stdout: 'other-session-fine\n' });
      expect(r.stderr).toMatch(/Permission denied/);
      expect(r).toMatchObject({ stdout_truncated: true, stderr_truncated: true });
      expect(peak - before).toBeLessThan(64 * 1024 ** 2);
      expect(await bash(sb, 'echo after')).toMatchObject({ ok: true, stdout: 'after\n' });
    });
  });

  describe('a command\'s processes end with it', () => {
    it('setsid, nohup and double-fork implants are gone when the command ends', async () => {
      const r = await bash(
        sb,
        [
          'setsid sleep 1000 &',
          'nohup sleep 1001 >/dev/null 2>&1 &',
          '( ( sleep 1002 & ) & )',
          'setsid bash -c "trap \\"\\" TERM HUP; while :; do sleep 0.2; done" </dev/null >/dev/null 2>&1 &',
          'python3 -c "import os,time\nif os.fork()==0:\n  os.setsid()\n  if os.fork()==0:\n    time.sleep(1003)" &',
          'sleep 0.3; ps -u 1000 -o comm= | grep -c sleep',
        ].join('\n'),
      );
      expect(Number(r.stdout!.trim())).toBeGreaterThanOrEqual(3);
      expect(await strays()).toBe('');
    });

    it('an implant cannot forge the next result', async () => {
      const pid = await executorPid();
      // The reproduced attack: stop the executor, read its stdin, answer in its place.
      await bash(
        sb,
        `setsid bash -c 'kill -STOP ${pid}; exec 3</proc/${pid}/fd/0; while read -r l <&3; do echo "{\\"rid\\":\\"x\\",\\"result\\":{\\"ok\\":true,\\"stdout\\":\\"FORGED\\"}}" > /proc/${pid}/fd/1; done' >/dev/null 2>&1 &
       sleep 0.3`,
      );
      expect(await bash(sb, 'echo REAL-OUTPUT')).toMatchObject({ ok: true, stdout: 'REAL-OUTPUT\n' });
      expect(await sb.execute(cmd({ tool: 'write', path: 'secret.txt', content: 'real secret' }))).toMatchObject({ ok: true, bytes_written: 11 });
      const view = await sb.readPath('secret.txt');
      expect(view.kind === 'file' && view.bytes.toString()).toBe('real secret');
    });

    it('300 leftover sleepers do not exhaust the next command', async () => {
      // Past the pids limit (256): fork until refused, each child in a session of its own.
      await bash(sb, 'python3 -c "import os,time\nfor i in range(300):\n  try:\n    pid = os.fork()\n  except OSError:\n    break\n  if pid == 0:\n    os.setsid(); time.sleep(1000); os._exit(0)"');
      expect(await bash(sb, 'echo forks-fine')).toMatchObject({ ok: true, stdout: 'forks-fine\n' });
      expect(await strays()).toBe('');
    });

    it('a process whose main thread exited (a zombie leader with live threads) is killed too', async () => {
      // Attack F1 of the review: the leader shows State Z while a thread goes on forging files.
      await bash(
        sb,
        `setsid python3 -c "
import ctypes, threading, time
def loop():
    while True:
        open('/workspace/forged.txt', 'w').write('FORGED-BY-IMPLANT')
        time.sleep(0.05)
threading.Thread(target=loop).start()
time.sleep(0.1)
ctypes.CDLL(None).syscall(60, 0)" >/dev/null 2>&1 &
sleep 0.5`,
      );
      expect(await sb.execute(cmd({ tool: 'write', path: 'forged.txt', content: 'real' }))).toMatchObject({ ok: true });
      await new Promise((r) => setTimeout(r, 300));
      expect(await sb.execute(cmd({ tool: 'read', path: 'forged.txt' }))).toMatchObject({ ok: true, stdout: 'real' });
      expect(await strays()).toBe('');
    });

    it('a fork loop that fills the pids limit cannot stop the sweep', async () => {
      // Attack F3: with every pid taken, a sweep that forks a killer fails.
      const r = await bash(sb, 'setsid python3 -c "import os,time\nwhile True:\n  try:\n    if os.fork()==0:\n      time.sleep(1000)\n  except OSError:\n    time.sleep(0.01)" >/dev/null 2>&1 & sleep 1; echo filled', { timeout: 30 });
      expect(r).toMatchObject({ ok: true, stdout: 'filled\n' });
      expect(await bash(sb, 'echo next')).toMatchObject({ ok: true, stdout: 'next\n' });
      expect(await strays()).toBe('');
    });

    it('a timed-out command takes its escaped children with it', async () => {
      const r = await bash(sb, 'setsid sleep 1000 & sleep 30', { timeout: 1 });
      expect(r).toMatchObject({ ok: false, error_code: 'timeout' });
      expect(await strays()).toBe('');
    });
  });

  describe('the file views cannot be raced', () => {
    it('a symlink swap loop never makes GET files/ or read return a file outside', async () => {
      await sb.execute(cmd({ tool: 'write', path: 'inside.txt', content: 'INSIDE' }));
      // The swap loop runs inside one long command: readPath does not queue behind it.
      const loop = bash(
        sb,
        'ln -sfn /etc/passwd out.lnk; end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do cp -P out.lnk t.new; mv -Tf t.new t; cp inside.txt t.new; mv -Tf t.new t; done',
        { timeout: 20 },
      );
      let outside = 0;
      let inside = 0;
      const deadline = Date.now() + 3_500;
      while (Date.now() < deadline) {
        const v = await sb.readPath('t').catch(() => undefined);
        if (v?.kind === 'file' && v.bytes.toString().includes('root:')) outside++;
        if (v?.kind === 'file' && v.bytes.toString() === 'INSIDE') inside++;
      }
      await loop;
      expect(outside).toBe(0);
      expect(inside).toBeGreaterThan(0); // the race was real: the file side was seen
      // After the command, nothing swaps any more: read sees one stable answer.
      const r = await sb.execute(cmd({ tool: 'read', path: 't' }));
      expect(r.stdout ?? '').not.toContain('root:');
    });
  });

  describe('shell start-up files are never read', () => {
    it('~/.bash_profile, ~/.bashrc and BASH_ENV written by one command do not run in the next', async () => {
      await bash(sb, 'for f in ~/.bash_profile ~/.bashrc ~/.profile ~/.bash_login; do echo "echo PWNED-$f" > $f; done; echo "echo PWNED-ENV" > /tmp/env.sh');
      const r = await bash(sb, 'echo clean; env | sort');
      expect(r.stdout).not.toContain('PWNED');
      expect(r.stdout!.startsWith('clean\n')).toBe(true);
      expect(r.stdout).not.toMatch(/^BASH_ENV=|^THINKFLOW_/m);
      expect(r.stdout).toMatch(/^HOME=\/home\/sandbox$/m);
    });
  });

  describe('native tools take no options from their arguments', () => {
    it('list_files {path: "-delete"} and grep {path: "--include=*"} delete and widen nothing', async () => {
      await bash(sb, 'mkdir -p keep && echo precious > keep/a.txt');
      for (const [name, args] of [['list_files', { path: '-delete' }], ['grep', { pattern: 'x', path: '-delete' }]] as const) {
        const made = commandFromToolCall('c1', name, JSON.stringify(args), FLOWS.react.nativeTools);
        expect(made.ok).toBe(true);
        if (made.ok) await sb.execute(made.command);
      }
      expect(await bash(sb, 'cat keep/a.txt')).toMatchObject({ ok: true, stdout: 'precious\n' });
    });
  });
});
