// PUT /v1/sessions/:id/workspace (API.md additions 2026-12-01) on real Redis
// and Docker with the shipped policies: a tar or tar.gz lands whole, as the
// command user, announced as files_seeded and never in the ledger; every
// refusal (each attack of the issue reproduced) leaves the workspace exactly
// as it was.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { LABEL_SESSION } from '../../../services/sandbox/index.ts';
import { client } from '../pipeline/helpers.ts';
import { suiteService } from '../suite-service.ts';
import { bomb, tar, tgz, type FixtureEntry } from './tar-fixtures.ts';

const QUOTA_MB = 16;
const svc = suiteService('ws-upload', {
  THINKFLOW_POLICY_DIR: 'policies', THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter',
  THINKFLOW_MAX_UPLOAD_MB: '1', THINKFLOW_MAX_RUNNING_PER_KEY: '40', THINKFLOW_WORKSPACE_QUOTA_MB: String(QUOTA_MB), THINKFLOW_WORKSPACE_INODES: '4096',
  ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
});
let a: ReturnType<typeof client>;
beforeAll(() => {
  a = client(svc.url!, 'k-a');
});

type Answer = { status: number; body: any };

async function put(sid: string, body: Buffer | ReadableStream, type = 'application/x-tar', key = 'k-a'): Promise<Answer> {
  const init = { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': type }, body, duplex: 'half' } as RequestInit;
  const res = await fetch(`${svc.url}/v1/sessions/${sid}/workspace`, init);
  return { status: res.status, body: await res.json() };
}

async function session(body: unknown = {}): Promise<string> {
  const res = await a.json('/v1/sessions', body);
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

async function bash(sid: string, cmd: string): Promise<{ status: string; stdout: string; error?: string }> {
  const res = await fetch(`${svc.url}/v1/sessions/${sid}/commands`, {
    method: 'POST', headers: { authorization: 'Bearer k-a', 'content-type': 'text/plain' }, body: `<tf-bash id="1" cmd="${cmd}" />`,
  });
  return ((await res.json()) as { results: { status: string; stdout: string; error?: string }[] }).results[0]!;
}

/** Every path of the workspace with its type, size and mtime: what "exactly as it was" is checked against. */
async function snapshot(sid: string): Promise<string> {
  const r = await bash(sid, "find . -mindepth 1 -printf '%p %y %s %T@ %l\\n' | sort");
  expect(r.status).toBe('succeeded');
  return r.stdout;
}

/** A body that sends its first KiB, then holds the rest until `release()`: an upload caught mid-stream. */
function heldBody(body: Buffer): { stream: ReadableStream; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  const stream = new ReadableStream({
    async start(c) {
      c.enqueue(body.subarray(0, 1024));
      await held;
      c.enqueue(body.subarray(1024));
      c.close();
    },
  });
  return { stream, release };
}

/** A session with a small workspace in it (a directory, a file, a link), uploaded. */
async function seeded(extra: unknown = {}): Promise<{ sid: string; before: string }> {
  const sid = await session(extra);
  const first = await put(sid, tar([{ name: 'keep/', type: '5' }, { name: 'keep/a.txt', data: 'A\n' }, { name: 'link', type: '2', linkname: 'keep/a.txt' }]));
  expect(first).toMatchObject({ status: 200, body: { files: 2, bytes: 2 } });
  return { sid, before: await snapshot(sid) };
}

describe('PUT /v1/sessions/:id/workspace', () => {
  it('lands a tar.gz whole, as the command user, with modes and links; files_seeded, nothing in the ledger', async () => {
    const sid = await session();
    const long = `deep/${'d'.repeat(120)}/name.txt`;
    const gnuLong = `deep/${'g'.repeat(120)}/gnu.txt`;
    const entries: FixtureEntry[] = [
      { name: './', type: '5' },
      { name: 'src/', type: '5' },
      { name: 'src/main.py', data: 'print(1)\n' },
      { name: 'run.sh', data: '#!/bin/sh\necho hi\n', mode: 0o755 },
      { name: 'docs', type: '2', linkname: 'src' },
      { name: '.git/config', data: '[core]\n\tbare = false\n' },
      { name: long, data: 'long\n' },
      { name: gnuLong, data: 'gnu\n', longName: 'gnu' },
    ];
    const up = await put(sid, tgz(entries), 'application/gzip');
    const bytes = entries.reduce((n, e) => n + Buffer.byteLength(e.data ?? ''), 0);
    expect(up).toEqual({ status: 200, body: { files: 6, bytes } });
    expect((await (await a.get(`/v1/sessions/${sid}/ledger`)).json()).entries).toEqual([]);
    const check = await bash(sid, 'stat -c %U:%a run.sh src/main.py .git/config && readlink docs && cat docs/main.py');
    expect(check.stdout).toBe('sandbox:755\nsandbox:644\nsandbox:644\nsrc\nprint(1)\n');
    expect(await (await a.get(`/v1/sessions/${sid}/files/${long}`)).text()).toBe('long\n');
    expect(await (await a.get(`/v1/sessions/${sid}/files/${gnuLong}`)).text()).toBe('gnu\n');
    // Uploads bring .git whole (the rule applies to commands), commands still may not write there.
    const write = await fetch(`${svc.url}/v1/sessions/${sid}/commands`, {
      method: 'POST', headers: { authorization: 'Bearer k-a', 'content-type': 'text/plain' }, body: '<tf-write id="1" path=".git/config">x</tf-write>',
    });
    expect(((await write.json()) as any).results[0]).toMatchObject({ status: 'forbidden' });
  });

  it('announces the files as files_seeded (not commands)', async () => {
    const sid = await session();
    expect((await put(sid, tar([{ name: 'a.txt', data: 'abc' }, { name: 'l', type: '2', linkname: 'a.txt' }, { name: 'd/', type: '5' }]))).status).toBe(200);
    const res = await fetch(`${svc.url}/v1/sessions/${sid}/events`, { headers: { authorization: 'Bearer k-a' }, signal: AbortSignal.timeout(3000) });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('files_seeded')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const data = JSON.parse(/event: files_seeded\ndata: (.*)\n/.exec(text)![1]!);
    expect(data.paths).toEqual([{ path: 'a.txt', bytes: 3 }, { path: 'l', bytes: 0 }]);
  });

  it('merges into the workspace: a file replaced, the rest kept', async () => {
    const { sid } = await seeded();
    expect((await put(sid, tar([{ name: 'keep/a.txt', data: 'A2\n' }, { name: 'new.txt', data: 'N' }]))).status).toBe(200);
    expect((await bash(sid, 'cat keep/a.txt link new.txt')).stdout).toBe('A2\nA2\nN');
  });

  const ATTACKS: [string, FixtureEntry][] = [
    ['an absolute path', { name: '/etc/evil', data: 'x' }],
    ['a .. component', { name: 'keep/../../evil', data: 'x' }],
    ['a symbolic link out', { name: 'out', type: '2', linkname: '../../etc' }],
    ['an absolute symbolic link out', { name: 'out', type: '2', linkname: '/etc/passwd' }],
    ['a hard link', { name: 'hard', type: '1', linkname: 'keep/a.txt' }],
    ['a character device', { name: 'dev', type: '3' }],
    ['a block device', { name: 'blk', type: '4' }],
    ['a FIFO', { name: 'fifo', type: '6' }],
    ["the service's baseline store", { name: '.thinkflow-private/index.json', data: '{}' }],
  ];
  for (const [what, bad] of ATTACKS) {
    it(`refuses ${what} with invalid_archive naming it, after good entries, and writes nothing`, async () => {
      const { sid, before } = await seeded();
      const body = tar([{ name: 'fine/', type: '5' }, { name: 'fine/x.txt', data: 'x' }, { name: 'keep/a.txt', data: 'changed' }, bad]);
      const r = await put(sid, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_archive', details: { entry: bad.name } });
      expect(r.body.error.message).toContain(JSON.stringify(bad.name));
      expect(await snapshot(sid)).toBe(before);
    });
  }

  it('refuses an entry that goes through a link of the archive', async () => {
    const { sid, before } = await seeded();
    const r = await put(sid, tar([{ name: 'l2', type: '2', linkname: 'keep' }, { name: 'l2/x', data: 'x' }]));
    expect(r.body.error).toMatchObject({ code: 'invalid_archive', details: { entry: 'l2/x' } });
    expect(await snapshot(sid)).toBe(before);
  });

  it('refuses truncated, corrupt and empty archives (400) and writes nothing', async () => {
    const { sid, before } = await seeded();
    const good = tar([{ name: 'big.txt', data: 'y'.repeat(5000) }, { name: 'z.txt', data: 'z' }]);
    const gz = tgz([{ name: 'big.txt', data: 'y'.repeat(5000) }, { name: 'z.txt', data: 'z' }]);
    for (const [body, type] of [[good.subarray(0, 3000), 'application/x-tar'], [gz.subarray(0, gz.length - 20), 'application/gzip'], [Buffer.from('not a tar at all'.repeat(64)), 'application/x-tar'], [Buffer.alloc(0), 'application/x-tar']] as const) {
      const r = await put(sid, body, type);
      expect([r.status, r.body.error.code]).toEqual([400, 'invalid_archive']);
    }
    expect(await snapshot(sid)).toBe(before);
  });

  it('stops a gzip bomb of a few KiB at the quota: 413 workspace_full, nothing left, service memory flat', async () => {
    const { sid, before } = await seeded();
    const body = await bomb(2 * QUOTA_MB * 1024 * 1024);
    expect(body.length).toBeLessThan(48 * 1024);
    const rss = process.memoryUsage().rss;
    const r = await put(sid, body, 'application/gzip');
    expect([r.status, r.body.error.code]).toEqual([413, 'workspace_full']);
    expect(process.memoryUsage().rss - rss).toBeLessThan(32 * 1024 * 1024);
    expect(await snapshot(sid)).toBe(before);
  });

  it('refuses a body over THINKFLOW_MAX_UPLOAD_MB (413), declared or chunked, and writes nothing', async () => {
    const { sid, before } = await seeded();
    const big = tar([{ name: 'big.bin', data: Buffer.alloc(2 * 1024 * 1024, 1) }]);
    const declared = await put(sid, big);
    expect([declared.status, declared.body.error.code]).toEqual([413, 'payload_too_large']);
    const chunked = new ReadableStream({
      start(c) {
        for (let i = 0; i < big.length; i += 64 * 1024) c.enqueue(big.subarray(i, i + 64 * 1024));
        c.close();
      },
    });
    const streamed = await put(sid, chunked);
    expect([streamed.status, streamed.body.error.code]).toEqual([413, 'payload_too_large']);
    expect(await snapshot(sid)).toBe(before);
  });

  it('answers 409 session_busy while a command runs, and takes the upload once idle', async () => {
    const { sid } = await seeded();
    const turn = fetch(`${svc.url}/v1/sessions/${sid}/commands`, {
      method: 'POST', headers: { authorization: 'Bearer k-a', 'content-type': 'text/plain' }, body: '<tf-bash id="1" cmd="sleep 3" />',
    });
    for (let i = 0; i < 50; i++) {
      const entries = (await (await a.get(`/v1/sessions/${sid}/ledger`)).json()).entries as { status: string }[];
      if (entries.some((e) => e.status === 'running')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const busy = await put(sid, tar([{ name: 'n.txt', data: 'n' }]));
    expect([busy.status, busy.body.error.code]).toEqual([409, 'session_busy']);
    await turn;
    expect((await put(sid, tar([{ name: 'n.txt', data: 'n' }]))).status).toBe(200);
  });

  it('refuses a turn of commands (409 session_busy) while an upload streams in, then lands the upload', async () => {
    const { sid } = await seeded();
    const { stream, release } = heldBody(tar([{ name: 'slow.txt', data: 's'.repeat(4096) }]));
    const upload = put(sid, stream);
    // The staging directory shows once the upload holds the session (a listing does not wait for it).
    for (let i = 0; i < 100; i++) {
      const root = (await (await a.get(`/v1/sessions/${sid}/files/`)).json()) as { entries: { name: string }[] };
      if (root.entries.some((e) => e.name.startsWith('.thinkflow-upload-'))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const turn = await fetch(`${svc.url}/v1/sessions/${sid}/commands`, {
      method: 'POST', headers: { authorization: 'Bearer k-a', 'content-type': 'text/plain' }, body: '<tf-bash id="1" cmd="true" />',
    });
    expect(turn.status).toBe(409);
    expect(((await turn.json()) as any).error).toMatchObject({ code: 'session_busy', details: { held_by: 'upload' } });
    release();
    expect((await upload).status).toBe(200);
    expect((await bash(sid, 'wc -c slow.txt')).stdout).toBe('4096 slow.txt\n');
  });

  it('answers 502 upload_failed when the extraction program dies mid-stream, writes nothing, and frees the session', async () => {
    const { sid, before } = await seeded();
    const { stream, release } = heldBody(tar([{ name: 'half.txt', data: 'h'.repeat(8192) }]));
    const upload = put(sid, stream);
    const box = execFileSync('docker', ['ps', '-q', '--filter', `label=${LABEL_SESSION}=${sid}`], { encoding: 'utf8' }).trim();
    expect(box).not.toBe('');
    let killed = false;
    for (let i = 0; i < 100 && !killed; i++) {
      try {
        execFileSync('docker', ['exec', '--user', '1000:1000', box, 'pkill', '-KILL', '-f', 'upload-extract.mjs']);
        killed = true;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // not started yet (pkill exits 1)
      }
    }
    expect(killed).toBe(true);
    const r = await upload;
    release();
    expect([r.status, r.body.error.code]).toEqual([502, 'upload_failed']);
    expect(await snapshot(sid)).toBe(before);
    expect((await put(sid, tar([{ name: 'after.txt', data: 'a' }]))).status).toBe(200);
  });

  it("answers 404 for another key's session (and an unknown one), 415 for another media type", async () => {
    const { sid, before } = await seeded();
    const body = tar([{ name: 'x.txt', data: 'x' }]);
    expect((await put(sid, body, 'application/x-tar', 'k-b')).status).toBe(404);
    expect((await put('ses_00000000000000000000000000000000', body)).status).toBe(404);
    const wrong = await put(sid, body, 'text/plain');
    expect([wrong.status, wrong.body.error.code]).toEqual([415, 'unsupported_media_type']);
    expect(await snapshot(sid)).toBe(before);
  });

  it('checks every path as a write: a forbidden one is 400 invalid_files naming the rule, nothing written', async () => {
    const policy = { rules: [{ id: 'no-secrets', tool: 'write', path: 'secrets/**', decision: 'forbid', justification: 'keys stay out' }] };
    const { sid, before } = await seeded({ policy });
    const r = await put(sid, tar([{ name: 'ok.txt', data: 'ok' }, { name: 'secrets/', type: '5' }, { name: 'secrets/key', data: 'k' }]));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_files', details: { entry: 'secrets', rule: 'no-secrets', decision: 'forbid' } });
    expect(r.body.error.message).toContain('no-secrets');
    expect(await snapshot(sid)).toBe(before);
  });

  it('refuses what conflicts with the workspace (409 workspace_conflict): a file over a directory, a path through a link', async () => {
    const { sid, before } = await seeded();
    const overDir = await put(sid, tar([{ name: 'z.txt', data: 'z' }, { name: 'keep', data: 'a file now' }]));
    expect(overDir.body.error).toMatchObject({ code: 'workspace_conflict', details: { entry: 'keep' } });
    const throughLink = await put(sid, tar([{ name: 'link/x.txt', data: 'x' }]));
    expect(throughLink.body.error).toMatchObject({ code: 'workspace_conflict', details: { entry: 'link' } });
    expect(await snapshot(sid)).toBe(before);
  });
});
