// Issue 18: `DELETE /v1/sessions/:id` through the real service, Docker and a
// per-session filesystem. A 21,000-deep tree answered 500 and leaked its
// volume (dockerd ran out of descriptors walking it) while the session was
// marked deleted and its caps released. Now the delete is O(1) (the image is
// one file) and a cleanup that fails keeps the session, caps and all, until
// a later DELETE succeeds.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { LABEL_SESSION, sessionSlug } from '../../../services/sandbox/index.ts';
import { client } from '../pipeline/helpers.ts';
import { suiteService } from '../suite-service.ts';

const DEPTH = 21_000;
const svc = suiteService('session-delete', {
  THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter',
  // One open session per key: a cap still held is a 429 on the next create.
  THINKFLOW_MAX_SESSIONS_PER_KEY: '1',
  // CI runs as root with loop devices: without them the test must fail, not fall back.
  THINKFLOW_WORKSPACE_FS: 'loop',
  THINKFLOW_WORKSPACE_QUOTA_MB: '256',
  ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
});
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;

beforeAll(() => {
  a = client(svc.url!, 'k-a');
  b = client(svc.url!, 'k-b');
});

const imageOf = (sid: string) => path.join(svc.handle.runtime.config.workspace.dir, `${svc.boxes}${sessionSlug(sid)}.img`);

/** Loop devices backed by the image, including one whose file was unlinked (`(deleted)`). */
function loopsOf(image: string): string[] {
  const { loopdevices = [] } = JSON.parse(execFileSync('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' }) || '{}') as {
    loopdevices?: { name: string; 'back-file': string | null }[];
  };
  return loopdevices.filter((l) => (l['back-file'] ?? '').startsWith(image)).map((l) => l.name);
}

/** What the host holds of the session: image file, loop devices, and Docker objects labelled for it. */
function onHost(sid: string): { image: boolean; loops: string[]; containers: string[]; volumes: string[] } {
  const labelled = (args: string[]) => execFileSync('docker', [...args, '--filter', `label=${LABEL_SESSION}=${sid}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return { image: existsSync(imageOf(sid)), loops: loopsOf(imageOf(sid)), containers: labelled(['ps', '-aq']), volumes: labelled(['volume', 'ls', '-q']) };
}

async function newSession(c: typeof a): Promise<string> {
  const res = await c.json('/v1/sessions', {});
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

let ids = 0;
const attr = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

async function run(c: typeof a, sid: string, cmd: string): Promise<{ status: string; stdout?: string; error?: string }> {
  const res = await c.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="${++ids}" cmd="${attr(cmd)}" />`);
  expect(res.status).toBe(200);
  const { results } = (await res.json()) as { results: { status: string; stdout?: string; error?: string }[] };
  return results[0]!;
}

/** The session's place under the key's caps (Redis sets of API.md's per-key caps). */
async function capsHeld(sid: string): Promise<{ session: boolean; live: boolean }> {
  const { redis, keys, pipeline } = svc.handle.runtime;
  const owner = (await pipeline.sessionMeta(sid))!.owner!;
  return {
    session: (await redis.sismember(keys.ownerSessions(owner), sid)) === 1,
    live: (await redis.zscore(keys.ownerLive(owner), sid)) !== null,
  };
}

describe('DELETE /v1/sessions/:id with a filesystem per workspace', () => {
  it(`a session holding a ${DEPTH.toLocaleString('en')}-deep directory chain: 204, and no image, loop device, volume or container left`, async () => {
    const sid = await newSession(a);
    // One command, bounded: a Python loop makes the chain in about a second (one mkdir per level, no fork).
    const made = await run(a, sid, `timeout 60 python3 -c 'import os; [(os.mkdir("d"), os.chdir("d")) for _ in range(${DEPTH})]; print("deep")'`);
    expect(made).toMatchObject({ status: 'succeeded', stdout: 'deep\n' });
    // One byte per directory (the paths themselves would be 21,000 × 21,000 bytes of output).
    const dirs = await run(a, sid, 'find d -type d -printf x | wc -c');
    expect(Number(dirs.stdout)).toBe(DEPTH);
    const before = onHost(sid);
    expect(before).toMatchObject({ image: true, loops: [expect.stringMatching(/^\/dev\/loop\d+$/)], containers: [expect.any(String)], volumes: [expect.any(String)] });

    const t0 = performance.now();
    const res = await a.del(`/v1/sessions/${sid}`);
    const ms = performance.now() - t0;
    expect([res.status, await res.text()]).toEqual([204, '']);
    expect(onHost(sid)).toEqual({ image: false, loops: [], containers: [], volumes: [] });
    // Unmount, detach and unlink of one file whatever the tree (the volume path took dockerd minutes or failed).
    expect(ms).toBeLessThan(15_000);
    // Deleted for real: the caps are released (a new session fits the cap of 1) and the session reads as deleted.
    expect(await capsHeld(sid)).toEqual({ session: false, live: false });
    expect(((await (await a.get(`/v1/sessions/${sid}`)).json()) as { deleted_at: string | null }).deleted_at).toEqual(expect.any(String));
    const next = await newSession(a);
    expect((await a.del(`/v1/sessions/${next}`)).status).toBe(204);
  }, 180_000);

  it('a cleanup that fails (the image cannot be unlinked) answers 503 cleanup_failed and keeps the session and its caps; once fixed, DELETE answers 204 and nothing is left', async () => {
    const sid = await newSession(b);
    expect(await run(b, sid, 'echo kept > notes.txt')).toMatchObject({ status: 'succeeded' });
    const image = imageOf(sid);
    expect(onHost(sid)).toMatchObject({ image: true, loops: [expect.any(String)] });
    // An immutable file cannot be unlinked, even by root: the last step of the teardown fails for real.
    execFileSync('chattr', ['+i', image]);
    // Made removable again whatever the test's outcome, so the suite's cleanup can take it.
    onTestFinished(() => void (existsSync(image) && execFileSync('chattr', ['-i', image])));
    expect(execFileSync('lsattr', ['-d', image], { encoding: 'utf8' })).toMatch(/^\S*i\S* /);

    const res = await b.del(`/v1/sessions/${sid}`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: 'cleanup_failed', message: expect.stringContaining(sid) } });
    // Not deleted: readable, not marked, its ledger there, and both caps still held by it.
    const view = await b.get(`/v1/sessions/${sid}`);
    expect(view.status).toBe(200);
    expect(await view.json()).toMatchObject({ session_id: sid, deleted_at: null });
    expect((await b.get(`/v1/sessions/${sid}/ledger`)).status).toBe(200);
    expect(await capsHeld(sid)).toEqual({ session: true, live: true });
    const refused = await b.json('/v1/sessions', {});
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: 'too_many', details: { cap: 'THINKFLOW_MAX_SESSIONS_PER_KEY' } } });
    // The steps that could run did: what is left is the image, detached, and nothing else.
    expect(onHost(sid)).toEqual({ image: true, loops: [], containers: [], volumes: [] });

    execFileSync('chattr', ['-i', image]);
    const again = await b.del(`/v1/sessions/${sid}`);
    expect([again.status, await again.text()]).toEqual([204, '']);
    expect(onHost(sid)).toEqual({ image: false, loops: [], containers: [], volumes: [] });
    expect(await capsHeld(sid)).toEqual({ session: false, live: false });
    const next = await newSession(b);
    expect((await b.del(`/v1/sessions/${next}`)).status).toBe(204);
  }, 120_000);
});
