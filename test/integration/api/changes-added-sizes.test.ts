// The change list's added-file bytes (changes.mjs lists an added file by its lstat size, unread) against
// what the archive and the patch show, for symlinks (non-UTF-8 and long targets), hard links, non-UTF-8 names,
// sparse and empty files; a new session's queue has global concurrency 1 once its first command is queued.
// Real Redis and Docker, the replay model (review helper-58).
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';
import { cleanupPrefix, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

const PREFIX = testPrefix('addedsizes');
const SANDBOXES = sandboxPrefix('addedsizes');

const SEEDS: Record<string, string> = { 'keep.txt': 'kept content\n', 'src/a.txt': 'one\n' };
const SCRIPT = [
  'set -e',
  'mkdir -p d',
  `ln -s "$(printf 't\\377rg\\303\\251t')" d/l1`,
  `ln -s "$(head -c 3000 /dev/zero | tr '\\0' x)" d/l2`,
  'ln -s ../keep.txt d/l3',
  'ln keep.txt d/hard',
  `printf 'abc' > "$(printf 'n\\376.txt')"`,
  'truncate -s 5M sparse.bin',
  ': > empty.txt',
  '',
].join('\n');
const TURN = [
  `<tf-write id="1" path="mk.sh">\n${SCRIPT}</tf-write>`,
  '<tf-bash id="2" cmd="bash mk.sh" />',
].join('\n');

let model: ReplayModel;
let service: ServiceHandle;
let url: string;
const made: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), 'tft-wsout-'));
  made.push(d);
  return d;
};

beforeAll(async () => {
  const transcripts: TranscriptInput[] = [{ name: 'odd-files', match: 'make odd files', delay_ms: 0, turns: [{ reasoning: TURN, text: 'Done.' }] }];
  model = await startReplayModel({ transcripts });
  service = await startService(testConfig(PREFIX, {
    PORT: '0', THINKFLOW_SANDBOX_PREFIX: SANDBOXES, OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted',
  }), {});
  url = service.url!;
}, 120_000);
afterAll(async () => {
  await service?.close();
  await model?.close();
  await cleanupPrefix(PREFIX);
  await removeSandboxes(SANDBOXES);
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

async function json(path: string, init?: RequestInit): Promise<any> {
  const res = await fetch(`${url}${path}`, init);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}
async function download(path: string): Promise<Buffer> {
  const res = await fetch(`${url}${path}`);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

/** path (as the change list shows it: latin1 bytes read as UTF-8) -> lstat size (a link: its target's bytes). */
function sizes(dir: string, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  for (const raw of readdirSync(join(dir, prefix), { encoding: 'buffer' })) {
    const name = raw.toString('latin1');
    const rel = prefix ? `${prefix}/${name}` : name;
    if (name === '.git') continue;
    const full = Buffer.from(join(dir, rel), 'latin1');
    const st = lstatSync(full);
    const shown = Buffer.from(rel, 'latin1').toString('utf8');
    if (st.isDirectory()) Object.assign(out, sizes(dir, rel));
    else if (st.isSymbolicLink()) out[shown] = (readlinkSync(full, { encoding: 'buffer' }) as Buffer).length;
    else out[shown] = st.size;
  }
  return out;
}

describe('added files listed by their lstat size', () => {
  it('each added entry\'s bytes are what the archive holds, and the patch applied to the seeds gives the archive', async () => {
    const job = await json('/v1/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ task: 'make odd files', files: SEEDS }) });
    let view: any;
    for (let i = 0; i < 600; i++) {
      view = await json(`/v1/jobs/${job.job_id}`);
      if (['succeeded', 'failed', 'cancelled'].includes(view.status)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const sid0 = job.session_id as string;
    if (view.status !== 'succeeded') console.log(JSON.stringify((await json(`/v1/sessions/${sid0}/ledger`)).entries.slice(0, 2).map((r: any) => [r.id, r.status, r.error, r.stderr, r.cmd])));
    expect(view.status, view.error ?? '').toBe('succeeded');
    const sid = job.session_id as string;
    const list = (await json(`/v1/sessions/${sid}/changes`)) as { changes: Array<{ path: string; change: string; bytes: number }> };

    const archive = scratch();
    const tgz = join(archive, '..', `${sid}.tar.gz`);
    writeFileSync(tgz, await download(`/v1/sessions/${sid}/workspace`));
    execFileSync('tar', ['-xzf', tgz, '-C', archive]);
    const inArchive = sizes(archive);
    const added = list.changes.filter((c) => c.change === 'added');
    expect(added.map((c) => c.path).sort()).toEqual(Object.keys(inArchive).filter((p) => !(p in SEEDS)).sort());
    expect(added.map((c) => [c.path, c.bytes])).toEqual([
      ['d/hard', 13], ['d/l1', 7], ['d/l2', 3000], ['d/l3', 11], ['empty.txt', 0], ['mk.sh', Buffer.byteLength(SCRIPT)], ['n\ufffd.txt', 3], ['sparse.bin', 5 * 1024 * 1024],
    ]);
    for (const c of added) expect([c.path, c.bytes]).toEqual([c.path, inArchive[c.path]]);
    expect(view.changes).toEqual({ added: added.length, modified: 0, deleted: 0 });

    // The patch (which still reads every added file) turns the seeds into the archive.
    const original = scratch();
    for (const [p, content] of Object.entries(SEEDS)) {
      mkdirSync(dirname(join(original, p)), { recursive: true });
      writeFileSync(join(original, p), content);
    }
    execFileSync('git', ['init', '-q'], { cwd: original });
    const patchFile = join(original, '..', `${sid}.patch`);
    writeFileSync(patchFile, await download(`/v1/sessions/${sid}/changes?format=patch`));
    execFileSync('git', ['apply', patchFile], { cwd: original });
    expect(sizes(original)).toEqual(inArchive);
  }, 180_000);

  it('a new session\'s queue is at global concurrency 1 once its first command is queued (createSession does not wait for it)', async () => {
    const { redis, keys, pipeline } = service.runtime as any;
    const meta = await pipeline.createSession({ owner: null });
    const queueMeta: string = pipeline.queues.queue(meta.session_id).keys.meta;
    const turn = await pipeline.nextTurn(meta.session_id);
    const h = await pipeline.enqueue(meta.session_id, turn, { id: '1', tool: 'touch', path: 'x', need_result: false }, 'text');
    expect(await redis.hget(queueMeta, 'concurrency')).toBe('1');
    await pipeline.awaitResult(h);
    void keys;
  }, 120_000);
});
