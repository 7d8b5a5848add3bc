// A pipeline's round (API.md additions 2026-12-01), end to end on real Redis,
// Docker and the scripted model: a small git repository uploaded as a tar.gz
// with its `.git`, then jobs on that session (`session_id`) that see it; one
// job at a time per session (409), another key's session not found (404);
// the CLI's `submit --workspace DIR` packs and uploads a directory.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { startHarness, type Harness } from './harness.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const KEYS = 'k-a:submitter,k-b:submitter';

const TRANSCRIPTS: TranscriptInput[] = [
  {
    name: 'inspect', match: 'inspect the repository', delay_ms: 0,
    turns: [
      { reasoning: '<tf-bash id="1" cmd="git status --porcelain && git log --format=%s && cat README.md" need_result="true" />', text: '' },
      { text: 'Looked.' },
    ],
  },
  {
    // Edits two files, adds one (binary) and deletes one.
    name: 'four-changes', match: 'change four files', delay_ms: 0,
    turns: [{
      reasoning: [
        '<tf-edit id="1" path="README.md"><old># demo</old><new># demo, edited</new></tf-edit>',
        '<tf-edit id="2" path="src/app.js"><old>console.log(1);</old><new>console.log(2);</new></tf-edit>',
        '<tf-bash id="3" cmd="printf \'\\x89PNG\\x00\\x01\' > logo.png" />',
        '<tf-bash id="4" cmd="rm old.txt" />',
      ].join('\n'),
      text: 'Changed four files.',
    }],
  },
  {
    name: 'slow', match: 'wait a little', delay_ms: 0,
    turns: [{ reasoning: '<tf-bash id="1" cmd="sleep 3" />', text: 'Waited.' }],
  },
];

let h: Harness;
let repo: string;
let archive: Buffer;

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' });
}

beforeAll(async () => {
  const env = { THINKFLOW_API_KEYS: KEYS, ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}) };
  h = await startHarness('ws-job', TRANSCRIPTS, env, 'k-a');
  repo = mkdtempSync(join(tmpdir(), 'tf-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'README.md'), '# demo\n');
  mkdirSync(join(repo, 'src'));
  writeFileSync(join(repo, 'src', 'app.js'), 'console.log(1);\n');
  writeFileSync(join(repo, 'old.txt'), 'to be deleted\n');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'first commit');
  archive = execFileSync('tar', ['czf', '-', '-C', repo, '.']);
});
afterAll(async () => {
  await h?.close();
  if (repo) rmSync(repo, { recursive: true, force: true });
});

const auth = (key = 'k-a') => ({ authorization: `Bearer ${key}` });

async function newSession(body: unknown = {}): Promise<string> {
  const res = await fetch(`${h.url}/v1/sessions`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return ((await res.json()) as { session_id: string }).session_id;
}

async function upload(sid: string, key = 'k-a'): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.url}/v1/sessions/${sid}/workspace`, { method: 'PUT', headers: { ...auth(key), 'content-type': 'application/gzip' }, body: new Uint8Array(archive) });
  return { status: res.status, body: await res.json() };
}

async function submit(body: Record<string, unknown>, key = 'k-a'): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.url}/v1/jobs`, { method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** The first event of the session's stream (which stays open: read until one arrives). */
async function firstSessionEvent(sid: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${h.url}/v1/sessions/${sid}/events`, { headers: auth() });
  const reader = res.body!.getReader();
  let text = '';
  while (!/\ndata: .*\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  return JSON.parse(/\ndata: (.*)\n/.exec(text)![1]!);
}

/** The job's whole SSE stream (it closes after job_finished): event names with their job ids. */
async function jobEvents(jobId: string): Promise<{ event: string; job_id: string }[]> {
  const text = await (await fetch(`${h.url}/v1/jobs/${jobId}/events`, { headers: auth() })).text();
  return [...text.matchAll(/event: (\w+)\ndata: (.*)\n/g)].map((m) => ({ event: m[1]!, job_id: JSON.parse(m[2]!).job_id }));
}

describe('a job on an uploaded workspace', () => {
  it('uploads a git repository with .git (ledger empty, files_seeded), and a job on the session sees a clean checkout', async () => {
    const sid = await newSession();
    const up = await upload(sid);
    expect(up.status).toBe(200);
    expect(up.body.files).toBeGreaterThan(5);
    expect(await h.ledger(sid)).toEqual([]);
    expect(await firstSessionEvent(sid)).toMatchObject({ type: 'files_seeded', job_id: null });
    const { status, body } = await submit({ task: 'inspect the repository', session_id: sid });
    expect(status).toBe(202);
    expect(body.session_id).toBe(sid);
    const job = await h.waitFinal(body.job_id);
    expect(job).toMatchObject({ status: 'succeeded', commands: { total: 1, succeeded: 1 } });
    const [record] = await h.ledger(sid);
    expect(record).toMatchObject({ tool: 'bash', status: 'succeeded', stdout: 'first commit\n# demo\n' });
    // The job's stream is its own: it starts after the upload's files_seeded, every event carries the job.
    const events = await jobEvents(body.job_id);
    expect(events[0]!.event).not.toBe('files_seeded');
    expect(events.at(-1)).toEqual({ event: 'job_finished', job_id: body.job_id });
    expect(events.every((e) => e.job_id === body.job_id)).toBe(true);

    // A second job on the same session: its counts, stream and feedback are its own.
    const second = await submit({ task: 'inspect the repository', session_id: sid });
    const job2 = await h.waitFinal(second.body.job_id);
    expect(job2).toMatchObject({ status: 'succeeded', commands: { total: 1, succeeded: 1 } });
    const events2 = await jobEvents(second.body.job_id);
    expect(events2.filter((e) => e.event === 'job_finished')).toEqual([{ event: 'job_finished', job_id: second.body.job_id }]);
  });

  it('round trip: four changes listed exactly; the patch turns a clean checkout into the downloaded archive, file by file', async () => {
    const sid = await newSession();
    expect((await upload(sid)).status).toBe(200);
    const { body } = await submit({ task: 'change four files', session_id: sid });
    expect(await h.waitFinal(body.job_id)).toMatchObject({ status: 'succeeded', commands: { total: 4, succeeded: 4 } });
    const get = (path: string) => fetch(`${h.url}/v1/sessions/${sid}${path}`, { headers: auth() });
    const changes = ((await (await get('/changes')).json()) as { changes: { path: string; change: string }[] }).changes;
    expect(changes.map((c) => `${c.change} ${c.path}`).sort()).toEqual(['added logo.png', 'deleted old.txt', 'modified README.md', 'modified src/app.js']);
    const dir = mkdtempSync(join(tmpdir(), 'tf-roundtrip-'));
    try {
      writeFileSync(join(dir, 'change.patch'), Buffer.from(await (await get('/changes?format=patch')).arrayBuffer()));
      writeFileSync(join(dir, 'out.tar.gz'), Buffer.from(await (await get('/workspace')).arrayBuffer()));
      execFileSync('git', ['clone', '-q', repo, join(dir, 'clean')]);
      git(join(dir, 'clean'), 'apply', '--check', join(dir, 'change.patch'));
      git(join(dir, 'clean'), 'apply', join(dir, 'change.patch'));
      mkdirSync(join(dir, 'out'));
      execFileSync('tar', ['xzf', join(dir, 'out.tar.gz'), '-C', join(dir, 'out')]);
      const files = (root: string) => (readdirSync(root, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
        .filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(root.length + 1)).filter((p) => !p.startsWith('.git/')).sort();
      const patched = files(join(dir, 'clean'));
      expect(patched).toEqual(files(join(dir, 'out')));
      expect(patched).toEqual(['README.md', 'logo.png', 'src/app.js']);
      for (const f of patched) expect(readFileSync(join(dir, 'clean', f)).equals(readFileSync(join(dir, 'out', f))), f).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("takes the session's settings unless the job sets them", async () => {
    const sid = await newSession({ approval: 'on-request' });
    const own = await submit({ task: 'inspect the repository', session_id: sid });
    expect((await h.waitFinal(own.body.job_id)).approval).toBe('on-request');
    const set = await submit({ task: 'inspect the repository', session_id: sid, approval: 'never' });
    expect((await h.waitFinal(set.body.job_id)).approval).toBe('never');
  });

  it('one job at a time: 409 session_busy for a second job and for an upload while it runs; free again after', async () => {
    const sid = await newSession();
    const first = await submit({ task: 'wait a little', session_id: sid });
    expect(first.status).toBe(202);
    const again = await submit({ task: 'wait a little', session_id: sid });
    expect([again.status, again.body.error.code]).toEqual([409, 'session_busy']);
    const up = await upload(sid);
    expect([up.status, up.body.error.code]).toEqual([409, 'session_busy']);
    expect((await h.waitFinal(first.body.job_id)).status).toBe('succeeded');
    expect((await upload(sid)).status).toBe(200);
    // A job's own new session is claimed as well: no upload into it while it runs.
    const own = await submit({ task: 'wait a little' });
    const into = await upload(own.body.session_id);
    expect([into.status, into.body.error.code]).toEqual([409, 'session_busy']);
    await h.waitFinal(own.body.job_id);
  });

  it("answers 404 for another key's session", async () => {
    const sid = await newSession();
    const other = await submit({ task: 'inspect the repository', session_id: sid }, 'k-b');
    expect([other.status, other.body.error.code]).toEqual([404, 'session_not_found']);
  });

  it('`thinkflow submit --workspace DIR --wait` packs the directory, .git included, and runs the job on it', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'submit', 'inspect the repository', '--workspace', repo, '--wait', '--json'], {
      cwd: ROOT, env: { ...process.env, THINKFLOW_URL: h.url, THINKFLOW_API_KEY: 'k-a' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code, stderr).toBe(0);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0].workspace.files).toBeGreaterThan(5);
    const final = lines.at(-1);
    expect(final).toMatchObject({ status: 'succeeded', session_id: lines[0].session_id });
    const [record] = await h.ledger(final.session_id);
    expect(record?.stdout).toBe('first commit\n# demo\n');
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# demo\n');
  });
});
