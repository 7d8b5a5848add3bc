// Issue 22, "only workers touch Docker": a `thinkflow serve --role api`
// process whose DOCKER_HOST is a socket of this test's own, which counts
// connections, serves a session's files, uploads, archive, changes and patch
// through a `--role worker` process (real Docker), and never connects to it.
// With the worker gone it answers 503 `sandbox_unavailable` within
// THINKFLOW_SANDBOX_CALL_PICKUP_MS instead of hanging. Real Redis, real
// processes (pipeline/sandbox-calls).
import { spawn, type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupPrefix, client, newSession, policyDir, REDIS_URL, removeSandboxes, sandboxPrefix, startWorker, testPrefix } from '../pipeline/helpers.ts';
import { tar } from './tar-fixtures.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const prefix = testPrefix('nodocker');
const boxes = sandboxPrefix('nodocker');
const PICKUP_MS = 1500;
const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'tf-nodocker-'));
const dockerSock = join(dir, 'docker.sock');
let dockerConnections = 0;
let fakeDocker: Server;
let worker: ChildProcess;
let api: ChildProcess;
let url = '';

const env = {
  REDIS_URL, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_POLICY_DIR: policyDir(),
  THINKFLOW_SANDBOX_CALL_PICKUP_MS: String(PICKUP_MS), THINKFLOW_WORKER_IDLE_MS: '3000',
};

async function startApi(): Promise<string> {
  api = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--role', 'api', '--port', '0'], {
    cwd: ROOT, env: { ...process.env, ...env, THINKFLOW_ROLE: 'api', DOCKER_HOST: `unix://${dockerSock}` }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(api);
  return new Promise<string>((resolve, reject) => {
    let log = '';
    api.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    api.on('exit', (code) => reject(new Error(`api exited (${code}): ${log}`)));
  });
}

beforeAll(async () => {
  // Something that answers where DOCKER_HOST points, so an attempt would be seen (a missing socket only fails).
  fakeDocker = createServer((sock) => { dockerConnections++; sock.destroy(); });
  await new Promise<void>((r) => fakeDocker.listen(dockerSock, r));
  worker = await startWorker({ ...env, ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}) }, children);
  url = await startApi();
}, 120_000);

afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGTERM');
      await new Promise((r) => c.once('exit', r));
    }
  }
  await new Promise((r) => fakeDocker?.close(r));
  await removeSandboxes(boxes);
  await cleanupPrefix(prefix);
  rmSync(dir, { recursive: true, force: true });
});

describe('an API process without Docker', () => {
  let sid = '';

  it('is ready once a worker answers for Docker (readyz asks through a call)', async () => {
    const res = await fetch(`${url}/readyz`);
    expect(await res.json()).toEqual({ status: 'ready', redis: true, docker: true, unavailable: [], reason: null });
  });

  it('seeds files, serves them and a listing, and runs commands through the worker', async () => {
    const c = client(url);
    sid = await newSession(c, { files: { 'src/a.txt': 'one\ntwo\n', 'old.txt': 'bye\n' } });
    const file = await c.get(`/v1/sessions/${sid}/files/src/a.txt`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('one\ntwo\n');
    const root = await c.get(`/v1/sessions/${sid}/files`);
    expect(((await root.json()) as { entries: { name: string }[] }).entries.map((e) => e.name).sort()).toEqual(['old.txt', 'src']);
    expect((await c.get(`/v1/sessions/${sid}/files/nope.txt`)).status).toBe(404);
    const turn = await c.text(`/v1/sessions/${sid}/commands`, [
      '<tf-edit id="1" path="src/a.txt"><old>two</old><new>TWO</new></tf-edit>',
      '<tf-bash id="2" cmd="unlink old.txt" />', // (`rm` asks, in this policy)
      '<tf-write id="3" path="new.md">\n# new\n</tf-write>',
    ].join('\n'));
    expect(((await turn.json()) as { results: { status: string }[] }).results.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('answers changes and a patch that git applies', async () => {
    const c = client(url);
    const list = (await (await c.get(`/v1/sessions/${sid}/changes`)).json()) as { baseline_at: string | null; changes: { path: string; change: string }[] };
    expect(list.baseline_at).not.toBeNull();
    expect(list.changes.map((x) => `${x.change} ${x.path}`).sort()).toEqual(['added new.md', 'deleted old.txt', 'modified src/a.txt']);
    const patch = await c.get(`/v1/sessions/${sid}/changes?format=patch`);
    expect(patch.status).toBe(200);
    const text = await patch.text();
    const repo = join(dir, 'apply');
    execFileSync('mkdir', ['-p', join(repo, 'src')]);
    writeFileSync(join(repo, 'src/a.txt'), 'one\ntwo\n');
    writeFileSync(join(repo, 'old.txt'), 'bye\n');
    writeFileSync(join(dir, 'p.diff'), text);
    execFileSync('git', ['apply', join(dir, 'p.diff')], { cwd: repo });
    expect(execFileSync('cat', ['src/a.txt', 'new.md'], { cwd: repo, encoding: 'utf8' })).toBe('one\nTWO\n# new\n');
  });

  it('streams the archive (tar.gz and tar)', async () => {
    const c = client(url);
    for (const format of ['tar.gz', 'tar']) {
      const res = await c.get(`/v1/sessions/${sid}/workspace?format=${format}`);
      expect(res.status).toBe(200);
      const file = join(dir, `ws.${format}`);
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      const names = execFileSync('tar', ['-tf', file], { encoding: 'utf8' }).split('\n').filter(Boolean).map((n) => n.replace(/^\.\//, ''));
      expect(names).toEqual(expect.arrayContaining(['src/a.txt', 'new.md']));
      expect(names).not.toContain('old.txt');
    }
  });

  it('takes an upload (streamed to the worker) and refuses a bad archive with its code', async () => {
    const up = (body: Buffer) => fetch(`${url}/v1/sessions/${sid}/workspace`, { method: 'PUT', headers: { 'content-type': 'application/x-tar' }, body: new Uint8Array(body) });
    const big = Buffer.alloc(3 * 1024 * 1024 + 5, 'x');
    const ok = await up(tar([{ name: 'up/big.txt', data: big }, { name: 'up/small.txt', data: 'small\n' }]));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ files: 2, bytes: big.length + 6 });
    const back = await client(url).get(`/v1/sessions/${sid}/files/up/big.txt`);
    expect(Buffer.from(await back.arrayBuffer()).equals(big)).toBe(true);
    const bad = await up(tar([{ name: '../escape.txt', data: 'no' }]));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_archive');
  });

  it('deletes a session: the worker removes its sandbox', async () => {
    const c = client(url);
    const other = await newSession(c, { files: { 'x.txt': 'x\n' } });
    expect((await c.del(`/v1/sessions/${other}`)).status).toBe(204);
    expect((await c.get(`/v1/sessions/${other}/files/x.txt`)).status).toBe(410);
    expect(execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${boxes}`], { encoding: 'utf8' }).trim().split('\n').filter(Boolean)).toHaveLength(1);
  });

  it('never opened its DOCKER_HOST', () => {
    expect(dockerConnections).toBe(0);
  });

  it('with no worker left: 503 sandbox_unavailable within the pickup bound for files, archive, changes, patch and upload; readyz says no Docker but stays ready', async () => {
    worker.kill('SIGTERM');
    await new Promise((r) => worker.once('exit', r));
    const c = client(url);
    const upload = () => fetch(`${url}/v1/sessions/${sid}/workspace`, {
      method: 'PUT', headers: { 'content-type': 'application/x-tar' }, body: new Uint8Array(tar([{ name: 'late.txt', data: 'late' }])),
    });
    const reads = ['files/src/a.txt', 'workspace', 'changes', 'changes?format=patch'].map((p) => () => c.get(`/v1/sessions/${sid}/${p}`));
    for (const ask of [...reads, upload]) {
      const t0 = Date.now();
      const res = await ask();
      const took = Date.now() - t0;
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('sandbox_unavailable');
      expect(body.error.message).toMatch(/no worker took the/);
      expect(took).toBeGreaterThanOrEqual(PICKUP_MS - 50);
      expect(took).toBeLessThan(PICKUP_MS + 2000);
    }
    // An API-only process serves without Docker (jobs, ledgers, approvals): still ready, and says no worker answers for Docker.
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', redis: true, docker: false, unavailable: [], reason: null });
    expect(dockerConnections).toBe(0);
  });
});
