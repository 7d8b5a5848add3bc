// Issue 18: `GET /files` answers 2xx or 4xx whatever the session's own
// commands do to the path meanwhile, and reading files (or seeding them)
// starts no container past the key's cap of live ones.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { LABEL_MANAGED, LABEL_SESSION } from '../../../services/sandbox/index.ts';
import { client } from '../pipeline/helpers.ts';
import { suiteService } from '../suite-service.ts';

const CAP = 2;
const svc = suiteService('files-bounds', { THINKFLOW_API_KEYS: 'k-a:submitter,k-b:admin', THINKFLOW_MAX_RUNNING_PER_KEY: String(CAP) });
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;

beforeAll(() => {
  a = client(svc.url!, 'k-a');
  b = client(svc.url!, 'k-b');
});

async function session(c: typeof a, body: unknown = {}): Promise<{ status: number; sid: string }> {
  const res = await c.json('/v1/sessions', body);
  const out = (await res.json()) as { session_id?: string };
  return { status: res.status, sid: out.session_id ?? '' };
}

/** Running containers of these sessions (default: of every session of this file), counted by docker's labels. */
function running(sids?: string[]): number {
  const ids = execFileSync('docker', ['ps', '-q', '--filter', `label=${LABEL_MANAGED}`, '--filter', `name=^/${svc.boxes}`, '--format', '{{.Label "${LABEL_SESSION}"}}'])
    .toString().split('\n').filter(Boolean);
  return ids.filter((sid) => !sids || sids.includes(sid)).length;
}

describe('GET files during a symlink and directory swap', () => {
  it('never answers 5xx: every read is 2xx, 400 (a link loop), 403, 404 or 409 path_changed', async () => {
    // An admin's session may run a loop (a complex command) without an operator.
    const { sid } = await session(b, { policy: { defaults: { complex_command: 'allow' } } });
    // The swapping loop ends by itself after a few seconds; the reads run until it does.
    // `d` is in turn a directory, a link inside, a link outside, a link to itself and a link to a file.
    const loop = [
      'mkdir -p real/sub dd/sub; echo inside > real/sub/f; echo x > dd/sub/f; end=$((SECONDS+6));',
      'while [ $SECONDS -lt $end ]; do',
      '  mv -T dd d; mv -T d dd; ln -s real d; unlink d; ln -s /etc d; unlink d; ln -s d d; unlink d; ln -s real/sub/f d; unlink d;',
      'done; echo done',
    ].join(' ');
    onTestFinished(async () => void (await b.del(`/v1/sessions/${sid}`)));
    const turn = b.text(`/v1/sessions/${sid}/commands`, `<tf-bash id="1" cmd="${loop}" />`);
    let finished = false;
    void turn.finally(() => (finished = true));
    const statuses = new Map<number, number>();
    const bad: string[] = [];
    const reader = async () => {
      for (let i = 0; !finished && i < 2000; i++) {
        for (const path of ['d', 'd/sub', 'd/sub/f', 'd/f', '']) {
          const res = await b.get(`/v1/sessions/${sid}/files/${path}`);
          const body = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500) bad.push(`${path}: ${res.status} ${body.slice(0, 200)}`);
          else if (res.status === 409) expect(JSON.parse(body)).toMatchObject({ error: { code: 'path_changed' } });
          else if (res.status === 400) expect(JSON.parse(body)).toMatchObject({ error: { code: 'invalid_path' } });
        }
      }
    };
    await Promise.all([reader(), reader(), reader(), reader()]);
    const res = await turn;
    // A link to itself is a 400 at any time, not only mid-swap.
    await b.text(`/v1/sessions/${sid}/commands`, '<tf-bash id="2" cmd="ln -s loop loop" />');
    const selfLink = await b.get(`/v1/sessions/${sid}/files/loop`);
    expect(selfLink.status).toBe(400);
    expect(((await selfLink.json()) as { error: { code: string } }).error.code).toBe('invalid_path');
    expect(res.status).toBe(200);
    const result = ((await res.json()) as { results: unknown[] }).results[0];
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'succeeded' });
    const total = [...statuses.values()].reduce((x, y) => x + y, 0);
    expect(total).toBeGreaterThan(100);
    expect(bad).toEqual([]);
    for (const status of statuses.keys()) expect([200, 400, 403, 404, 409]).toContain(status);
  }, 120_000);
});

describe('no side door around THINKFLOW_MAX_RUNNING_PER_KEY', () => {
  it(`GET files on ${CAP + 3} sessions starts at most ${CAP} containers; the rest are 429 too_many`, async () => {
    const sids: string[] = [];
    for (let i = 0; i < CAP + 3; i++) sids.push((await session(a)).sid);
    expect(running(sids)).toBe(0);
    const answers = await Promise.all(sids.map(async (sid) => (await a.get(`/v1/sessions/${sid}/files/`)).status));
    expect(answers.filter((s) => s === 200)).toHaveLength(CAP);
    expect(answers.filter((s) => s === 429)).toHaveLength(3);
    expect(running(sids)).toBeLessThanOrEqual(CAP);
    // Seeded files start a container too: refused while the key is at its cap, and nothing is left behind.
    const seeded = await a.json('/v1/sessions', { files: { 'a.txt': 'hello' } });
    expect(seeded.status).toBe(429);
    expect(((await seeded.json()) as { error: { details: { cap: string } } }).error.details.cap).toBe('THINKFLOW_MAX_RUNNING_PER_KEY');
    expect(running()).toBeLessThanOrEqual(CAP);
    // A live session frees its slot when deleted; then seeding works and counts.
    const live = sids.filter((_, i) => answers[i] === 200);
    await a.del(`/v1/sessions/${live[0]}`);
    const ok = await session(a, { files: { 'a.txt': 'hello' } });
    expect(ok.status).toBe(201);
    expect(await (await a.get(`/v1/sessions/${ok.sid}/files/a.txt`)).text()).toBe('hello');
    expect(running()).toBeLessThanOrEqual(CAP);
    for (const sid of [...sids, ok.sid]) await a.del(`/v1/sessions/${sid}`);
  }, 120_000);
});
