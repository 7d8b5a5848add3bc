// Issue 20, the workspace out: GET …/workspace (a tar.gz made in the
// sandbox), GET …/changes against the baseline (seeded files, before the
// first command) and ?format=patch, which `git apply` takes on the original
// files to give the same tree as the archive. Real Redis and Docker, the
// replay model.
import { execFileSync, spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, newSession } from '../pipeline/helpers.ts';
import { startHarness, type Harness } from '../jobs/harness.ts';

const SEEDS: Record<string, string> = {
  'src/a.txt': 'one\ntwo\nthree\n',
  'src/keep.txt': 'unchanged\n',
  'old.txt': 'delete me\n',
  // A NUL byte: git calls it binary, and so must the patch.
  'bin.dat': 'BIN\u0000\u0001\u0002 payload\n',
};
const EDITS = [
  '<tf-edit id="1" path="src/a.txt"><old>two</old><new>TWO</new></tf-edit>',
  `<tf-bash id="2" cmd="python3 -c &quot;open('bin.dat','ab').write(bytes(range(256)))&quot;" />`,
  '<tf-bash id="3" cmd="rm old.txt" />',
  '<tf-write id="4" path="docs/new.md">\n# new\n</tf-write>',
].join('\n');

let h: Harness;
const made: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), 'tf-wsout-'));
  made.push(d);
  return d;
};

beforeAll(async () => {
  h = await startHarness('wsout', [{ name: 'four-changes', match: 'change four files', delay_ms: 0, turns: [{ reasoning: EDITS, text: 'Done.' }] }],
    { THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter', THINKFLOW_CORS_ORIGINS: 'https://ci.example' }, 'k-a');
});
afterAll(async () => {
  await h?.close();
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

const a = () => client(h.url, 'k-a');
const b = () => client(h.url, 'k-b');

async function download(path: string): Promise<Buffer> {
  const res = await a().get(path);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

/** Every file and symlink under `dir` (not `.git`): path -> content, or `-> target` for a link. */
function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(dir, prefix))) {
    const rel = prefix ? `${prefix}/${name}` : name;
    if (name === '.git') continue;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) Object.assign(out, tree(dir, rel));
    else if (st.isSymbolicLink()) out[rel] = `-> ${readlinkSync(join(dir, rel))}`;
    else out[rel] = readFileSync(join(dir, rel)).toString('latin1');
  }
  return out;
}

function checkout(files: Record<string, string>): string {
  const dir = scratch();
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), content);
  }
  execFileSync('git', ['init', '-q'], { cwd: dir });
  return dir;
}

describe('a job that edits two files, adds one and deletes one', () => {
  it('lists exactly those four, counts them on the job, and its patch turns the original files into the archive', async () => {
    const { job_id, session_id } = await h.submit({ task: 'change four files', files: SEEDS });
    const job = await h.waitFinal(job_id);
    expect(job.status, job.error ?? '').toBe('succeeded');
    expect(job.changes).toEqual({ added: 1, modified: 2, deleted: 1 });

    const list = (await (await a().get(`/v1/sessions/${session_id}/changes`)).json()) as { baseline_at: string; changes: unknown[] };
    expect(Date.parse(list.baseline_at)).toBeLessThanOrEqual(Date.parse(job.finished_at!));
    expect(list.changes).toEqual([
      { path: 'bin.dat', change: 'modified', bytes: Buffer.byteLength(SEEDS['bin.dat']!) + 256 },
      { path: 'docs/new.md', change: 'added', bytes: 6 },
      { path: 'old.txt', change: 'deleted', bytes: 0 },
      { path: 'src/a.txt', change: 'modified', bytes: 14 },
    ]);

    const archive = scratch();
    writeFileSync(join(archive, '..', `${session_id}.tar.gz`), await download(`/v1/sessions/${session_id}/workspace`));
    execFileSync('tar', ['-xzf', join(archive, '..', `${session_id}.tar.gz`), '-C', archive]);
    const patch = await download(`/v1/sessions/${session_id}/changes?format=patch`);
    expect(patch.toString('latin1')).toContain('GIT binary patch');
    const original = checkout(SEEDS);
    writeFileSync(join(original, '..', `${session_id}.patch`), patch);
    execFileSync('git', ['apply', '--check', join(original, '..', `${session_id}.patch`)], { cwd: original });
    execFileSync('git', ['apply', join(original, '..', `${session_id}.patch`)], { cwd: original });
    const want = tree(archive);
    expect(Object.keys(want).sort()).toEqual(['bin.dat', 'docs/new.md', 'src/a.txt', 'src/keep.txt']);
    expect(tree(original)).toEqual(want);
  });
});

describe('thinkflow submit --out --patch', () => {
  it('waits for the job, then writes its workspace and its patch to local files', async () => {
    const dir = scratch();
    const flags = Object.entries(SEEDS).flatMap(([p, content], i) => {
      writeFileSync(join(dir, `seed${i}`), content);
      return ['--file', `${p}=${join(dir, `seed${i}`)}`];
    });
    const root = new URL('../../../', import.meta.url).pathname;
    const child = spawn(process.execPath, [join(root, 'bin/thinkflow.mjs'), 'submit', 'change four files', ...flags, '--out', join(dir, 'ws.tar.gz'), '--patch', join(dir, 'p.diff')],
      { cwd: root, env: { ...process.env, THINKFLOW_URL: h.url, THINKFLOW_API_KEY: 'k-a' } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status, stderr).toBe(0);
    expect(stderr).toMatch(/^workspace {2}.*ws\.tar\.gz \(\d+ bytes\)$/m);
    expect(stderr).toMatch(/^patch {6}.*p\.diff \(\d+ bytes\)$/m);
    const archive = scratch();
    execFileSync('tar', ['-xzf', join(dir, 'ws.tar.gz'), '-C', archive]);
    const original = checkout(SEEDS);
    execFileSync('git', ['apply', join(dir, 'p.diff')], { cwd: original });
    expect(tree(original)).toEqual(tree(archive));
  });
});

describe('symlinks', () => {
  it('are archived and patched as symlinks, never followed, even when they point outside', async () => {
    const sid = await newSession(a(), { files: { 'a.txt': 'x\n' } });
    for (const cmd of ['ln -s /etc/passwd out', 'ln -s a.txt in']) {
      const res = await a().text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${cmd}" />`);
      expect(((await res.json()) as { results: { status: string }[] }).results[0]!.status).toBe('succeeded');
    }
    const tar = await download(`/v1/sessions/${sid}/workspace?format=tar`);
    const listing = execFileSync('tar', ['-tvf', '-'], { input: tar }).toString();
    expect(listing).toMatch(/^l.* \.\/out -> \/etc\/passwd$/m);
    expect(listing).toMatch(/^l.* \.\/in -> a\.txt$/m);
    expect(listing).not.toContain('.thinkflow-private');
    expect(tar.toString('latin1')).not.toContain('root:x:0:0');

    const list = (await (await a().get(`/v1/sessions/${sid}/changes`)).json()) as { changes: unknown[] };
    expect(list.changes).toEqual([{ path: 'in', change: 'added', bytes: 5 }, { path: 'out', change: 'added', bytes: 11 }]);
    const patch = (await download(`/v1/sessions/${sid}/changes?format=patch`)).toString();
    expect(patch).toContain('diff --git a/out b/out\nnew file mode 120000\n');
    expect(patch).toContain('+/etc/passwd\n\\ No newline at end of file\n');
    const original = checkout({ 'a.txt': 'x\n' });
    execFileSync('git', ['apply', '-'], { cwd: original, input: patch });
    expect(tree(original)).toEqual({ 'a.txt': 'x\n', in: '-> a.txt', out: '-> /etc/passwd' });
  });
});

describe('who may read', () => {
  it('another key gets 404 for the archive, the changes and the patch; a session where nothing ran has no baseline', async () => {
    const sid = await newSession(a());
    for (const path of ['workspace', 'workspace?format=tar', 'changes', 'changes?format=patch']) {
      const res = await b().get(`/v1/sessions/${sid}/${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('session_not_found');
    }
    expect(await (await a().get(`/v1/sessions/${sid}/changes`)).json()).toEqual({ baseline_at: null, changes: [] });
    expect((await download(`/v1/sessions/${sid}/changes?format=patch`)).length).toBe(0);
    expect((await a().get(`/v1/sessions/${sid}/workspace?format=zip`)).status).toBe(400);
    // The archive is written straight into the socket, with the headers the middleware prepared (CORS here).
    const res = await fetch(`${h.url}/v1/sessions/${sid}/workspace?format=tar`, { headers: { authorization: 'Bearer k-a', origin: 'https://ci.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://ci.example');
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect(execFileSync('tar', ['-tf', '-'], { input: Buffer.from(await res.arrayBuffer()) }).toString()).toBe('./\n');
  });
});
