// Issue 19's acceptance: a tool added as its descriptor entry plus the
// executor's function — nothing else — parses, is judged by the policy, runs
// in the sandbox, is ledgered and shows in the CLI. Everything runs the
// patched copy's own code: its CLI, its sandbox image, its service.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOwnRedis, type OwnRedis } from '../own-redis.ts';
import { removeSandboxes, sandboxPrefix } from '../pipeline/helpers.ts';
import { hostLeftovers } from '../sandbox/helpers.ts';
import { copyWithMoveTool } from './move-fixture.ts';

// A tag of this run's own: the image holds the patched executor, and another run's removal must not pull it away.
const IMAGE = `thinkflow/sandbox:tool-fixture-${process.pid}`;
const TASK = 'move the fixture file';
const NATIVE_TASK = 'move it with a native call';
const TRANSCRIPTS = [
  {
    name: 'move-tag', match: TASK, delay_ms: 0,
    turns: [{
      reasoning: '<tf-write id="1" path="a.txt">\nmoved by tf-move\n</tf-write>\n<tf-move id="2" path="a.txt" dest="b/c.txt" />\n',
      text: 'a.txt is now b/c.txt.',
    }],
  },
  {
    // The react flow offers every tool as a native function; move's comes from its descriptor.
    name: 'move-native', match: NATIVE_TASK, delay_ms: 0, flow: 'react',
    turns: [
      { text: 'Writing, then moving.', tool_calls: [{ name: 'write', arguments: { path: 'r.txt', content: 'native\n' } }, { name: 'move', arguments: { path: 'r.txt', dest: 's/r.txt' } }] },
      { text: 'Moved r.txt to s/r.txt.' },
    ],
  },
];

type Run = { status: number | null; stdout: string; stderr: string };
let copy = '';

/** The copy's `thinkflow` CLI, run in the copy with no inherited model or service settings. */
function thinkflow(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [join(copy, 'bin/thinkflow.mjs'), ...args], { cwd: copy, env: { ...cleanEnv(), ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.on('close', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); }));
}

/** This process's environment without the settings that would point the copy elsewhere (a real model, another service or policy). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (/^(THINKFLOW_|OPENAI_|REDIS_URL$)/.test(k)) delete env[k];
  return env;
}

const lines = (out: string) => out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

beforeAll(() => {
  copy = copyWithMoveTool();
});
afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe('a tool added as a descriptor and an executor function (tf-move)', () => {
  it('parses: the copy\'s `thinkflow parse` gives a move command, and missing_dest without dest', async () => {
    const file = join(copy, 'moves.txt');
    writeFileSync(file, '<tf-move id="1" path="a.txt" dest="b.txt" />\n<tf-move id="2" path="a.txt" />\n');
    const r = await thinkflow(['parse', file]);
    expect(r.status, r.stderr).toBe(0);
    const [command, error] = lines(r.stdout);
    expect(command).toEqual({ type: 'command', stream: 'text', command: { id: '1', tool: 'move', path: 'a.txt', dest: 'b.txt', need_result: false } });
    expect(error).toMatchObject({ type: 'error', code: 'missing_dest', id: '2' });
  });

  it('is judged: the descriptor\'s default, a session rule on dest, and --dest required', async () => {
    const rules = join(copy, 'session-rules.yaml');
    writeFileSync(rules, 'version: 1\nrules:\n  - id: keep-secrets\n    tool: move\n    path: "secret/**"\n    decision: forbid\n    justification: secrets stay put\n');
    const [allowed, forbidden, usage] = await Promise.all([
      thinkflow(['policy', 'check', '--tool', 'move', '--path', 'a.txt', '--dest', 'b.txt']),
      thinkflow(['policy', 'check', '--session-rules', rules, '--tool', 'move', '--path', 'a.txt', '--dest', 'secret/x']),
      thinkflow(['policy', 'check', '--tool', 'move', '--path', 'a']),
    ]);
    expect(allowed.status, allowed.stderr).toBe(0);
    // No shipped file names move: the built-in default is the descriptor's.
    expect(lines(allowed.stdout)[0]).toMatchObject({ decision: 'allow', matched_rules: [], reason: expect.stringContaining('move default (built-in): allow') });
    expect(forbidden.status, forbidden.stderr).toBe(0);
    const line = lines(forbidden.stdout)[0]!;
    expect(line.decision).toBe('forbid');
    expect(line.matched_rules).toContainEqual(expect.objectContaining({ id: 'keep-secrets', layer: 'session', decision: 'forbid' }));
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('--dest');
  });

  it('meets the write protections of the policies without any file naming it; the seven tools keep their own rules', async () => {
    const rules = join(copy, 'write-rules.yaml');
    writeFileSync(rules, 'version: 1\nrules:\n  - id: docs-need-review\n    tool: write\n    path: "docs/**"\n    decision: prompt\n  - id: src-writes-ok\n    tool: write\n    path: "src/**"\n    decision: allow\n');
    const check = (...args: string[]) => thinkflow(['policy', 'check', '--session-rules', rules, ...args]);
    const [intoGit, wholeWorkspace, intoDocs, copyIntoDocs] = await Promise.all([
      check('--tool', 'move', '--path', 'a.txt', '--dest', '.git/hooks/pre-commit'),
      check('--tool', 'move', '--path', 'a.txt', '--dest', '.'),
      check('--tool', 'move', '--path', 'src/a.txt', '--dest', 'docs/a.txt'),
      check('--tool', 'copy', '--path', 'a.txt', '--dest', 'docs/a.txt'),
    ]);
    // protect-git-dir and no-whole-workspace-write name `write` (and the seven tools), never `move`.
    expect(lines(intoGit.stdout)[0]).toMatchObject({ decision: 'forbid', matched_rules: [expect.objectContaining({ id: 'protect-git-dir' })] });
    expect(lines(wholeWorkspace.stdout)[0]).toMatchObject({ decision: 'forbid', matched_rules: [expect.objectContaining({ id: 'no-whole-workspace-write' })] });
    // A write prompt reaches move's dest; the write allow on src/** is not listed: restrictions only.
    const docs = lines(intoDocs.stdout)[0]!;
    expect(docs).toMatchObject({ decision: 'prompt', matched_rules: [expect.objectContaining({ id: 'docs-need-review' })] });
    // copy is one of the seven tools of PROTOCOL.md §2: judged by rules naming copy only, as before.
    expect(lines(copyIntoDocs.stdout)[0]).toMatchObject({ decision: 'allow', matched_rules: [] });
  });

  describe('runs in the copy\'s sandbox image, is ledgered and shows in `thinkflow submit --wait`', () => {
    const boxes = sandboxPrefix('move-tool');
    let redis: OwnRedis | undefined;
    let serve: ChildProcess | undefined;
    let url = '';
    let built = false;

    beforeAll(async () => {
      execFileSync('bash', [join(copy, 'sandbox-image/build.sh')], { env: { ...cleanEnv(), THINKFLOW_SANDBOX_IMAGE: IMAGE }, stdio: ['ignore', 'ignore', 'pipe'] });
      built = true;
      redis = await startOwnRedis();
      const scripts = join(copy, 'move-transcripts.json');
      writeFileSync(scripts, JSON.stringify(TRANSCRIPTS));
      serve = spawn(process.execPath, [join(copy, 'bin/thinkflow.mjs'), 'serve', '--port', '0'], {
        cwd: copy,
        env: {
          ...cleanEnv(), REDIS_URL: redis.url, THINKFLOW_REDIS_PREFIX: 'tfmove', THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_SANDBOX_IMAGE: IMAGE,
          THINKFLOW_REPLAY_SCRIPTS: scripts, THINKFLOW_WORKSPACE_SPARES: '0', THINKFLOW_POLICY_DIR: join(copy, 'policies'),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      url = await listening(serve);
    }, 240_000);

    afterAll(async () => {
      if (serve && serve.exitCode === null) {
        serve.kill('SIGTERM');
        await new Promise((r) => serve!.once('exit', r));
      }
      await redis?.stop();
      await removeSandboxes(boxes);
      if (built) execFileSync('docker', ['image', 'rm', IMAGE], { stdio: ['ignore', 'ignore', 'pipe'] });
      const left = hostLeftovers(boxes);
      const containers = execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${boxes}`], { encoding: 'utf8' }).trim();
      const volumes = execFileSync('docker', ['volume', 'ls', '-q', '--filter', `name=^${boxes}`], { encoding: 'utf8' }).trim();
      expect({ ...left, containers, volumes }).toEqual({ images: [], loops: [], containers: '', volumes: '' });
    }, 60_000);

    const file = (sessionId: string, path: string) => fetch(`${url}/v1/sessions/${sessionId}/files/${path}`);

    it('moves a.txt to b/c.txt', async () => {
      const r = await thinkflow(['submit', TASK, '--wait'], { THINKFLOW_URL: url });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).toMatch(/\[2\] parsed\s+move {2}a\.txt -> b\/c\.txt/);
      expect(r.stderr).toMatch(/\[2\] succeeded\s+move {2}a\.txt -> b\/c\.txt/);
      expect(r.stdout).toMatch(/commands {3}2 total: 2 succeeded/);

      const sessionId = /session_id (\S+)/.exec(r.stdout)![1]!;
      const ledger = await (await fetch(`${url}/v1/sessions/${sessionId}/ledger`)).json() as { entries: Array<Record<string, unknown>> };
      expect(ledger.entries.map((e) => e.tool)).toEqual(['write', 'move']);
      expect(ledger.entries[1]).toMatchObject({ id: '2', tool: 'move', path: 'a.txt', dest: 'b/c.txt', status: 'succeeded', risk: 'medium', decision: 'allow', output_summary: 'moved' });

      const moved = await file(sessionId, 'b/c.txt');
      expect(moved.status).toBe(200);
      expect(await moved.text()).toBe('moved by tf-move\n');
      expect((await file(sessionId, 'a.txt')).status).toBe(404);

      const dashboard = await (await fetch(`${url}/dashboard/assets/tools.js`)).text();
      expect(dashboard).toContain('"move"');
    });

    it('moves through a native tool call in the react flow', async () => {
      const r = await thinkflow(['submit', NATIVE_TASK, '--flow', 'react', '--wait'], { THINKFLOW_URL: url });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).toMatch(/succeeded\s+move {2}r\.txt -> s\/r\.txt/);
      const sessionId = /session_id (\S+)/.exec(r.stdout)![1]!;
      expect(await (await file(sessionId, 's/r.txt')).text()).toBe('native\n');
      expect((await file(sessionId, 'r.txt')).status).toBe(404);
    });
  });
});

/** The API URL the service logs once it listens; rejects with its log when it exits first. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited (${code}): ${log}`)));
  });
}
