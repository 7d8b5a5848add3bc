// Preview before deciding (issue 24): `POST /v1/approvals/:token/preview`
// served by a `--role api` process with no Docker (its DOCKER_HOST is a
// socket of this test's own that counts connections: none) through a
// `--role worker` process (real Docker), which runs the pending command on a
// throwaway copy of the workspace. The real workspace stays byte-identical,
// a command past the bound is cut, a network approval and a decided one are
// not previewed, and no preview sandbox is left behind. Real Redis, real
// processes. The test policy (pipeline/helpers.ts): bash `rm` prompts.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Approvals, createKeys, createRedis } from '../../../services/pipeline/index.ts';
import { cleanupPrefix, client, newSession, policyDir, REDIS_URL, removeSandboxes, sandboxPrefix, startWorker, testPrefix } from '../pipeline/helpers.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const prefix = testPrefix('preview');
const boxes = sandboxPrefix('preview');
const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'tf-preview-'));
const dockerSock = join(dir, 'docker.sock');
const docker = new Docker();
let dockerConnections = 0;
let fakeDocker: Server;
let worker: ChildProcess;
let url = '';

const env = {
  REDIS_URL, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes, THINKFLOW_POLICY_DIR: policyDir(),
  THINKFLOW_SANDBOX_CALL_PICKUP_MS: '3000', THINKFLOW_WORKER_IDLE_MS: '3000', THINKFLOW_PREVIEW_TIMEOUT_S: '2',
  ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
};

type Change = { path: string; change: string; bytes: number; diff?: string };
type Preview = { status: string; code?: string; reason?: string; exit_code?: number; error_code?: string; stdout?: string; stderr?: string; limit_ms?: number; changes: Change[] };

async function startApi(): Promise<string> {
  const api = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--role', 'api', '--port', '0'], {
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
  fakeDocker = createServer((sock) => { dockerConnections++; sock.destroy(); });
  await new Promise<void>((r) => fakeDocker.listen(dockerSock, r));
  worker = await startWorker(env, children);
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
}, 60_000);

const c = () => client(url);

/** A session with `files`, its one-command turn started (it waits for the approval), and the pending approval's token. */
async function pending(files: Record<string, string>, cmd: string): Promise<{ sid: string; token: string; turn: Promise<Response> }> {
  const sid = await newSession(c(), { approval: 'on-request', files });
  const attr = cmd.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const turn = c().text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${attr}" />`);
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const list = (await (await c().get('/v1/approvals')).json()) as { approvals: { token: string; session_id: string }[] };
    const hit = list.approvals.find((a) => a.session_id === sid);
    if (hit) return { sid, token: hit.token, turn };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending approval in session ${sid}`);
}

async function preview(token: string): Promise<{ status: number; body: { preview?: Preview; error?: { code: string; message: string } } }> {
  const res = await c().json(`/v1/approvals/${token}/preview`, {});
  return { status: res.status, body: (await res.json()) as { preview?: Preview } };
}

async function workspaceHash(sid: string): Promise<string> {
  const res = await c().get(`/v1/sessions/${sid}/workspace?format=tar`);
  expect(res.status).toBe(200);
  return createHash('sha256').update(Buffer.from(await res.arrayBuffer())).digest('hex');
}

/** Preview sandboxes of this file: containers and volumes by label, and loop devices of their images. */
async function previewLeftovers(): Promise<string[]> {
  const filters = { label: ['thinkflow.preview=true'] };
  const containers = (await docker.listContainers({ all: true, filters })).flatMap((x) => x.Names).filter((n) => n.includes(boxes));
  const volumes = ((await docker.listVolumes({ filters })).Volumes ?? []).map((v) => v.Name).filter((n) => n.startsWith(boxes));
  const loops = execFileSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' })
    .split('\n').filter((l) => l.includes(`/${boxes}preview_`));
  let images: string[] = [];
  try { images = readdirSync('/var/lib/thinkflow/workspaces').filter((n) => n.startsWith(`${boxes}preview_`)); } catch { /* none made on this host */ }
  return [...containers, ...volumes, ...loops, ...images];
}

describe('POST /v1/approvals/:token/preview', () => {
  let first: { sid: string; token: string; turn: Promise<Response> };

  it('runs a bash command on a copy: output, exit code, added and deleted files; the real workspace is byte-identical', async () => {
    first = await pending({ 'old.txt': 'old\n', 'keep.md': 'keep\n' }, 'bash -c "echo hi > new.txt; rm old.txt; echo out"');
    const before = await workspaceHash(first.sid);
    const { status, body } = await preview(first.token);
    expect(status, JSON.stringify(body)).toBe(200);
    const p = body.preview!;
    expect(p).toMatchObject({ status: 'ok', exit_code: 0, stdout: 'out\n', limit_ms: 2000 });
    const byPath = Object.fromEntries(p.changes.map((x) => [x.path, x]));
    expect(Object.keys(byPath).sort()).toEqual(['new.txt', 'old.txt']);
    expect(byPath['new.txt']).toMatchObject({ change: 'added', bytes: 3, diff: expect.stringContaining('+hi') });
    expect(byPath['old.txt']).toMatchObject({ change: 'deleted', diff: expect.stringContaining('-old') });
    expect(await workspaceHash(first.sid)).toBe(before);
    const files = (await (await c().get(`/v1/sessions/${first.sid}/files`)).json()) as { entries: { name: string }[] };
    expect(files.entries.map((e) => e.name).sort()).toEqual(['keep.md', 'old.txt']);
    expect(await previewLeftovers()).toEqual([]);
  }, 90_000);

  it('runs one preview at a time per approval', async () => {
    const [a, b] = await Promise.all([preview(first.token), preview(first.token)]);
    const codes = [a.body.preview!, b.body.preview!].map((p) => p.status === 'unavailable' ? p.code : p.status).sort();
    expect(codes).toEqual(['ok', 'preview_running']);
  }, 90_000);

  it('a decided approval is not previewed (409 approval_closed); the command then runs in the real workspace', async () => {
    const ok = await c().json(`/v1/approvals/${first.token}`, { decision: 'approve' });
    expect(ok.status).toBe(200);
    const { status, body } = await preview(first.token);
    expect(status).toBe(409);
    expect(body.error).toMatchObject({ code: 'approval_closed', message: expect.stringMatching(/already decided .*nothing to preview/) });
    expect((await first.turn).status).toBe(200);
    const files = (await (await c().get(`/v1/sessions/${first.sid}/files`)).json()) as { entries: { name: string }[] };
    expect(files.entries.map((e) => e.name).sort()).toEqual(['keep.md', 'new.txt']);
    expect((await preview('no-such-token-0000000000000000')).status).toBe(404);
  }, 60_000);

  it('cuts a command that runs past the preview bound and says so', async () => {
    const p = await pending({ 'a.txt': 'a\n' }, 'rm -f a.txt; echo started; sleep 30');
    const t0 = Date.now();
    const { body } = await preview(p.token);
    expect(Date.now() - t0).toBeLessThan(25_000);
    expect(body.preview).toMatchObject({ status: 'failed', code: 'command_cut', error_code: 'timeout', stdout: 'started\n', limit_ms: 2000 });
    expect(body.preview!.reason).toMatch(/did not finish within the preview's 2 s/);
    expect(body.preview!.changes).toEqual([expect.objectContaining({ path: 'a.txt', change: 'deleted' })]);
    await c().json(`/v1/approvals/${p.token}`, { decision: 'reject', reason: 'no' });
    await p.turn;
    expect(await previewLeftovers()).toEqual([]);
  }, 60_000);

  it('a network approval is unavailable, with the reason', async () => {
    const redis = createRedis(REDIS_URL, 'tf-test-preview');
    try {
      const sid = await newSession(c(), {});
      const state = await new Approvals(redis, createKeys(prefix)).requestNetwork({
        sessionId: sid, jobId: null, recordId: '1', host: 'example.com', port: 443, target: 'example.com:443',
        evaluation: { decision: 'prompt', matched_rules: [], reason: 'network prompts' } as never, ttlS: 60, index: 1,
      });
      const { status, body } = await preview(state.token);
      expect(status).toBe(200);
      expect(body.preview).toEqual({ status: 'unavailable', code: 'network_approval', reason: expect.stringMatching(/network connection cannot be previewed/), changes: [] });
    } finally {
      redis.disconnect();
    }
  });

  it('the API process never connected to Docker', () => {
    expect(dockerConnections).toBe(0);
  });

  it('with no worker left, a pending approval is unavailable for a preview, saying why', async () => {
    const p = await pending({ 'b.txt': 'b\n' }, 'rm b.txt');
    // Killed, not stopped: the approval stays pending with nobody to run a preview.
    worker.kill('SIGKILL');
    await new Promise((r) => worker.once('exit', r));
    const t0 = Date.now();
    const { status, body } = await preview(p.token);
    expect(status).toBe(200);
    expect(body.preview).toMatchObject({ status: 'unavailable', code: 'worker_unavailable', reason: expect.stringMatching(/no worker took the preview/), changes: [] });
    expect(Date.now() - t0).toBeLessThan(10_000);
    p.turn.catch(() => undefined);
  }, 60_000);
});
