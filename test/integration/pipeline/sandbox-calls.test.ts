// Sandbox calls over a real Redis (pipeline/sandbox-calls): an API-side
// RemoteSandboxes and a worker-side SandboxCallServer, each with its own
// connections, as two processes would have. The worker's sandboxes are the
// in-memory ones of call-sandboxes.ts, so sizes, stalls and failures are the
// test's to choose; real Docker behind the same calls is in
// test/integration/api/api-without-docker.test.ts.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, createRedis, RemoteSandboxes, SandboxCallError, SandboxCallServer, type Keys, type PipelineRedis, type SandboxCallOptions } from '../../../services/pipeline/index.ts';
import { sandboxCallKeys } from '../../../services/pipeline/keys.ts';
import { UploadError } from '../../../services/sandbox/index.ts';
import { CallSandboxes, patternSha } from './call-sandboxes.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from './helpers.ts';

const prefix = testPrefix('sbxcalls');
const keys: Keys = createKeys(prefix);
const conns: PipelineRedis[] = [];
const closers: (() => Promise<unknown>)[] = [];
const conn = (name: string) => { const r = createRedis(REDIS_URL, `h3-${name}`); conns.push(r); return r; };

async function caller(opts: SandboxCallOptions = {}): Promise<RemoteSandboxes> {
  const remote = new RemoteSandboxes({ redis: conn('api'), keys, subscriber: conn('api-sub') }, opts);
  await remote.start();
  closers.push(() => remote.close());
  return remote;
}

async function worker(sandboxes: CallSandboxes, opts: SandboxCallOptions = {}): Promise<SandboxCallServer> {
  const server = new SandboxCallServer({ redis: conn('worker'), keys, subscriber: conn('worker-sub'), sandboxes, uploadOptions: async () => ({ check: () => null }) }, opts);
  await server.start();
  closers.push(() => server.close(100));
  return server;
}

const until = async (cond: () => boolean | Promise<boolean>, ms = 5000) => {
  const by = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > by) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const drain = async (s: Readable) => { const parts: Buffer[] = []; for await (const c of s) parts.push(c as Buffer); return Buffer.concat(parts); };

afterEach(async () => {
  while (closers.length) await closers.pop()!().catch(() => undefined);
  await cleanupPrefix(prefix);
});
beforeAll(() => cleanupPrefix(prefix));
afterAll(async () => {
  for (const r of conns) r.disconnect();
});

describe('values through a worker', () => {
  it('execute, readPath (bytes exactly, a directory, missing), resolvePaths and a change list larger than one frame', async () => {
    const box = new CallSandboxes();
    box.bigFile = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7) % 256));
    box.changeCount = 20_000; // ~1 MiB of JSON: several frames
    await worker(box);
    const api = await caller();
    const wrote = await api.execute('s1', { id: 'c1', tool: 'write', path: 'a.txt', content: 'hello', need_result: false });
    expect(wrote).toMatchObject({ ok: true, tool: 'write', bytes_written: 5 });
    expect(box.files.get('s1')?.get('a.txt')).toBe('hello');
    expect(await api.readPath('s1', 'a.txt')).toEqual({ kind: 'file', bytes: Buffer.from('hello') });
    const big = await api.readPath('s1', 'big');
    expect(big.kind === 'file' && sha(big.bytes)).toBe(sha(box.bigFile));
    expect(await api.readPath('s1', 'dir')).toEqual({ kind: 'dir', entries: [{ name: 'a', type: 'file', size: 1 }] });
    expect(await api.readPath('s1', 'nope')).toEqual({ kind: 'missing' });
    expect(await api.resolvePaths('s1', ['x', 'y'])).toEqual(['x', 'y']);
    const changes = await api.workspace.changes('s1');
    expect(changes.changes).toHaveLength(20_000);
    expect(changes.changes[19_999]).toEqual({ path: 'dir/file-19999.txt', change: 'added', bytes: 19_999 });
    await api.remove('s1');
    expect(box.removed).toEqual(['s1']);
    expect(await api.ping()).toBe(true);
  });

  it("the sandbox's errors arrive as they were thrown: name, code, exit code (baseline.ts reads them)", async () => {
    await worker(new CallSandboxes());
    const api = await caller();
    const err = await api.workspace.ensureBaseline('s1').catch((e: unknown) => e) as Error & { code?: string; exitCode?: number };
    expect(err).toBeInstanceOf(Error);
    expect({ name: err.name, code: err.code, exitCode: err.exitCode, message: err.message }).toEqual({ name: 'WorkspaceExecError', code: 'baseline_failed', exitCode: 3, message: 'baseline program failed' });
  });
});

describe('bounds', () => {
  it('no worker: 503 sandbox_unavailable within the pickup bound, and the call is taken back (it never runs later)', async () => {
    const api = await caller({ pickupMs: 400 });
    const t0 = Date.now();
    const err = await api.readPath('s1', 'a.txt').catch((e: unknown) => e) as SandboxCallError;
    const took = Date.now() - t0;
    expect(err).toBeInstanceOf(SandboxCallError);
    expect(err.code).toBe('sandbox_unavailable');
    expect(err.message).toMatch(/no worker took the readPath call of session s1 within 400 ms/);
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(1500);
    expect(await conns[0]!.llen(sandboxCallKeys(prefix).calls())).toBe(0);
    // A worker that starts now finds nothing to do.
    const box = new CallSandboxes();
    await worker(box);
    await new Promise((r) => setTimeout(r, 300));
    expect(box.log).toEqual([]);
  });

  it('a worker that took the call but does not answer: 504 sandbox_timeout after the answer bound', async () => {
    await worker(new CallSandboxes());
    const api = await caller({ pickupMs: 300, answerMs: 600 });
    const t0 = Date.now();
    const err = await api.readPath('s1', 'hang').catch((e: unknown) => e) as SandboxCallError;
    expect(err).toBeInstanceOf(SandboxCallError);
    expect(err.code).toBe('sandbox_timeout');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(850);
    expect(Date.now() - t0).toBeLessThan(2500);
  });

  it('an answer over maxAnswerBytes is refused (sandbox_answer_too_large), not collected', async () => {
    const box = new CallSandboxes();
    box.bigFile = Buffer.alloc(3 * 1024 * 1024, 1);
    await worker(box);
    const api = await caller({ maxAnswerBytes: 1024 * 1024 });
    const err = await api.readPath('s1', 'big').catch((e: unknown) => e) as SandboxCallError;
    expect(err.code).toBe('sandbox_answer_too_large');
  });

  it('a worker serves at most callsPerWorker calls at once; more wait for another worker (here: none, so 503)', async () => {
    await worker(new CallSandboxes(), { callsPerWorker: 1 });
    const api = await caller({ pickupMs: 400, answerMs: 5000 });
    const hanging = api.readPath('s1', 'hang').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const err = await api.readPath('s1', 'a.txt').catch((e: unknown) => e) as SandboxCallError;
    expect(err.code).toBe('sandbox_unavailable');
    void hanging;
  });
});

describe('streams', () => {
  it('an archive arrives whole, and a reader that stops holds the worker to window × frame bytes in Redis', async () => {
    const box = new CallSandboxes();
    box.archiveBytes = 24 * 1024 * 1024;
    await worker(box, { frameBytes: 64 * 1024, window: 4 });
    const api = await caller({ frameBytes: 64 * 1024, window: 4 });
    const paused = await api.workspace.archive('s1', 'tar');
    await new Promise((r) => setTimeout(r, 600)); // nobody reads
    const down = (await conns[0]!.keys(`${prefix}:*:down`))[0]!;
    expect(await conns[0]!.llen(down)).toBeLessThanOrEqual(4);
    // frames in Redis + the reader's own buffer + the worker's source buffers: far below the 24 MiB
    expect(box.produced).toBeLessThan(2 * 1024 * 1024);
    const all = await drain(paused);
    expect(all.length).toBe(24 * 1024 * 1024);
    expect(sha(all)).toBe(patternSha(24 * 1024 * 1024));
  });

  it("the reader's credits wake the worker at once (with polling slowed to 60 s, a reader that paused still gets 4 MiB within 20 s)", async () => {
    // 64 credit round trips: well under the bound even on a loaded machine; one missed wake-up waits a 60 s poll.
    const box = new CallSandboxes();
    box.archiveBytes = 4 * 1024 * 1024;
    await worker(box, { frameBytes: 64 * 1024, window: 2, pollMs: 60_000 });
    const api = await caller({ frameBytes: 64 * 1024, window: 2, pollMs: 60_000 });
    const s = await api.workspace.archive('s1', 'tar');
    await new Promise((r) => setTimeout(r, 300)); // the pipe fills; the worker waits for room
    const t0 = Date.now();
    expect((await drain(s)).length).toBe(4 * 1024 * 1024);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });

  it('a reader that goes away ends the stream in the worker (its source is destroyed)', async () => {
    const box = new CallSandboxes();
    box.archiveBytes = 64 * 1024 * 1024;
    await worker(box, { frameBytes: 64 * 1024, window: 4 });
    const api = await caller({ frameBytes: 64 * 1024, window: 4 });
    const s = await api.workspace.archive('s1', 'tar.gz');
    for await (const _ of s) break; // leaving the loop destroys the stream
    await until(() => box.sourceDestroyed, 3000);
    expect(box.produced).toBeLessThan(4 * 1024 * 1024);
  });

  it('a reader that goes away while it waits for the worker stops reading Redis (a closed pipe once spun on LPOP)', async () => {
    const box = new CallSandboxes();
    box.stallAfter = 64 * 1024; // one frame, then the worker waits on its source
    await worker(box, { frameBytes: 64 * 1024 });
    const api = await caller({ frameBytes: 64 * 1024, stallMs: 20_000 });
    const apiConn = conns.at(-2)!;
    const s = await api.workspace.archive('s1', 'tar');
    for await (const _ of s) break;
    let pops = 0;
    const lpop = apiConn.lpopBuffer.bind(apiConn);
    apiConn.lpopBuffer = ((...a: Parameters<typeof lpop>) => { pops++; return lpop(...a); }) as typeof apiConn.lpopBuffer;
    await new Promise((r) => setTimeout(r, 600));
    expect(pops).toBeLessThanOrEqual(1);
  });

  it('a worker whose stream stops moving: the reader fails with sandbox_timeout after the stall bound', async () => {
    const box = new CallSandboxes();
    box.stallAfter = 128 * 1024;
    await worker(box, { stallMs: 10_000 });
    const api = await caller({ stallMs: 500 });
    const s = await api.workspace.archive('s1', 'tar');
    const err = await drain(s).catch((e: unknown) => e) as SandboxCallError;
    expect(err).toBeInstanceOf(SandboxCallError);
    expect(err.code).toBe('sandbox_timeout');
  });
});

describe('uploads', () => {
  const bodyOf = (n: number) => Readable.from((function* () { for (let at = 0; at < n; at += 100_000) yield Buffer.alloc(Math.min(100_000, n - at), at % 256); })());

  it('the body arrives whole at the worker, with backpressure', async () => {
    const box = new CallSandboxes();
    await worker(box, { frameBytes: 64 * 1024, window: 4 });
    const api = await caller({ frameBytes: 64 * 1024, window: 4 });
    const n = 10 * 1024 * 1024 + 17;
    const expected = sha(await drain(bodyOf(n)));
    const r = await api.uploadWorkspace('s1', bodyOf(n), { check: () => null });
    expect(r).toMatchObject({ files: 1, bytes: n });
    expect(box.uploads).toEqual([{ sha256: expected, bytes: n }]);
  });

  it("the worker's refusal before the body's end is the answer (UploadError, its code and details); the sender stops", async () => {
    const box = new CallSandboxes();
    box.refuseUploads = true;
    await worker(box, { frameBytes: 64 * 1024, window: 4 });
    const api = await caller({ frameBytes: 64 * 1024, window: 4 });
    let sent = 0;
    const body = Readable.from((function* () { for (let i = 0; i < 2000; i++) { sent += 65536; yield Buffer.alloc(65536); } })());
    const err = await api.uploadWorkspace('s1', body, { check: () => null }).catch((e: unknown) => e) as UploadError;
    expect(err).toBeInstanceOf(UploadError);
    expect({ code: err.code, details: err.details }).toEqual({ code: 'invalid_archive', details: { entry: '../x' } });
    expect(sent).toBeLessThan(20 * 65536);
  });

  it("the sender's body failing (the API's size limit) is thrown as it was; the worker's upload fails too", async () => {
    const box = new CallSandboxes();
    await worker(box);
    const api = await caller();
    const limit = new Error('over THINKFLOW_MAX_UPLOAD_MB');
    const body = Readable.from((async function* () { yield Buffer.alloc(1000); await new Promise((r) => setTimeout(r, 200)); throw limit; })());
    const err = await api.uploadWorkspace('s1', body, { check: () => null }).catch((e: unknown) => e);
    expect(err).toBe(limit);
    await until(() => box.uploads.length === 1);
    expect(box.uploads[0]!.error).toBe('over THINKFLOW_MAX_UPLOAD_MB');
  });

  it('no worker: the upload fails 503 within the pickup bound, whatever the body size', async () => {
    const api = await caller({ pickupMs: 400 });
    const t0 = Date.now();
    const err = await api.uploadWorkspace('s1', bodyOf(50 * 1024 * 1024), { check: () => null }).catch((e: unknown) => e) as SandboxCallError;
    expect(err.code).toBe('sandbox_unavailable');
    expect(Date.now() - t0).toBeLessThan(1500);
  });
});
