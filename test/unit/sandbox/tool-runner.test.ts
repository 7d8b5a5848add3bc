// Host tools started by a runner process (services/sandbox/tool-runner.ts,
// host-tool-runner.mjs), not forked from the service: what they print and how
// they fail come back as from execFile, a runner that dies fails its pending
// calls and is started again, and the service's event loop is not held while
// a tool is forked.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HostToolError, runHostTool } from '../../../services/sandbox/host-tools.ts';
import { HostToolRunner } from '../../../services/sandbox/tool-runner.ts';

const runners: HostToolRunner[] = [];
afterEach(() => { for (const r of runners.splice(0)) r.close(); });
const newRunner = () => { const r = new HostToolRunner(); runners.push(r); return r; };

describe('host tools through the runner', () => {
  it('returns stdout, and stderr with the exit code when the tool fails', async () => {
    expect(await runHostTool('sh', ['-c', 'printf "a b\\n"; printf warn >&2'])).toBe('a b\n');
    const err = await runHostTool('sh', ['-c', 'echo nope >&2; exit 3']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostToolError);
    expect((err as HostToolError).stderr).toBe('nope\n');
    expect((err as HostToolError).message).toContain('sh -c echo nope >&2; exit 3 failed: nope');
    expect(((err as HostToolError).cause as { code: number }).code).toBe(3);
  });

  it('kills a tool past its time limit, and one that does not exist fails naming it', async () => {
    const slow = await runHostTool('sleep', ['5'], 200).catch((e: unknown) => e) as HostToolError;
    expect(slow).toBeInstanceOf(HostToolError);
    expect((slow.cause as { killed: boolean; signal: string }).signal).toBe('SIGKILL');
    const missing = await runHostTool('tf-no-such-tool', []).catch((e: unknown) => e) as HostToolError;
    expect(missing.message).toContain('tf-no-such-tool');
    expect((missing.cause as { code: string }).code).toBe('ENOENT');
  });

  it('calls at once are answered each with its own output', async () => {
    const outs = await Promise.all(Array.from({ length: 8 }, (_, i) => runHostTool('sh', ['-c', `sleep 0.0${8 - i}; echo ${i}`])));
    expect(outs).toEqual(Array.from({ length: 8 }, (_, i) => `${i}\n`));
  });

  it('a runner that dies fails the calls it had pending, and the next call starts a new one', async () => {
    const r = newRunner();
    const pending = r.run('sleep', ['10'], 30_000, 1024);
    await new Promise((res) => setTimeout(res, 200));
    process.kill(r.pid!, 'SIGKILL'); // this runner only: other test files' runners are theirs
    await expect(pending).rejects.toThrow(/host tool runner exited/);
    expect((await r.run('echo', ['again'], 5_000, 1024)).stdout).toBe('again\n');
  });

  it('an argument the runner cannot even start (a NUL byte) fails that call only, not the others in flight (attack: one bad call failing every session\'s)', async () => {
    const r = newRunner();
    const other = r.run('sh', ['-c', 'sleep 0.3; echo fine'], 5_000, 1024);
    const bad = await r.run('echo', ['a\u0000b'], 5_000, 1024);
    expect(bad.error?.message).toMatch(/null bytes|NUL|must be a string without null bytes/i);
    expect((await other).stdout).toBe('fine\n');
  });

  it("runs without this process's NODE_OPTIONS (a preload printing to stdout would corrupt the answers)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tf-runner-'));
    const preload = join(dir, 'apm.cjs');
    writeFileSync(preload, "process.stdout.write('[apm] ');\n");
    const before = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `--require ${preload}`;
    try {
      const r = newRunner();
      expect((await r.run('echo', ['clean'], 1_000, 1024)).stdout).toBe('clean\n');
    } finally {
      if (before === undefined) delete process.env.NODE_OPTIONS; else process.env.NODE_OPTIONS = before;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not hold this process's event loop while a tool is forked (a direct fork does, inside the call)", async () => {
    const r = newRunner();
    await r.run('true', [], 5_000, 1024); // the runner started
    /** The time each call took before it returned (the event loop held), median of ten. */
    const held = async (start: () => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t0 = performance.now();
        const done = start();
        ms.push(performance.now() - t0);
        await done;
      }
      return ms.sort((a, b) => a - b)[5]!;
    };
    const direct = await held(() => new Promise((res) => execFile('true', [], res)));
    const viaRunner = await held(() => r.run('true', [], 5_000, 1024));
    console.log(`event loop held per call (median): direct fork ${direct.toFixed(2)} ms, through the runner ${viaRunner.toFixed(2)} ms`);
    expect(viaRunner).toBeLessThan(direct / 2);
  });
});
