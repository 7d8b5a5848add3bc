import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ServiceHandle } from '../../../services/main/index.ts';
import { client, cleanupPrefix, rawGet, rawPost, readSse, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from './helpers.ts';

// The REST API of API.md on real Redis and real Docker sandboxes.
const prefix = testPrefix('api');
const boxes = sandboxPrefix('api');
let svc: ServiceHandle;
let sub1: ReturnType<typeof client>;
let sub2: ReturnType<typeof client>;
let op: ReturnType<typeof client>;
let admin: ReturnType<typeof client>;
let anon: ReturnType<typeof client>;

beforeAll(async () => {
  svc = await startService(testConfig(prefix, {
    PORT: '0', THINKFLOW_API_KEYS: 'k-sub1:submitter,k-sub2:submitter,k-op:operator,k-admin:admin',
    THINKFLOW_SANDBOX_PREFIX: boxes,
  }), {});
  sub1 = client(svc.url!, 'k-sub1');
  sub2 = client(svc.url!, 'k-sub2');
  op = client(svc.url!, 'k-op');
  admin = client(svc.url!, 'k-admin');
  anon = client(svc.url!);
});
afterAll(async () => {
  await svc?.close();
  await cleanupPrefix(prefix);
  await removeSandboxes(boxes);
});

async function newSession(c = sub1, body: unknown = {}) {
  const res = await c.json('/v1/sessions', body);
  expect(res.status).toBe(201);
  return ((await res.json()) as { session_id: string }).session_id;
}

describe('REST API (real Redis and Docker)', () => {
  it('health needs no key; readiness sees Redis and Docker', async () => {
    expect((await anon.get('/healthz')).status).toBe(200);
    const ready = await anon.get('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', redis: true, docker: true, unavailable: [], reason: null });
  });

  it('separates roles: 401 without key, 403 for the wrong role, 404 for another submitter\'s session', async () => {
    const noKey = await anon.json('/v1/sessions', {});
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    expect((await client(svc.url!, 'nope').get('/v1/approvals')).status).toBe(401);
    expect((await sub1.get('/metrics')).status).toBe(403);
    expect((await sub1.get('/v1/approvals')).status).toBe(403);
    expect((await op.json('/v1/sessions', {})).status).toBe(403);
    const metrics = await op.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toMatch(/^# TYPE thinkflow_http_requests_total counter$/m);
    const sid = await newSession(sub1);
    expect((await sub2.get(`/v1/sessions/${sid}/ledger`)).status).toBe(404);
    expect((await sub2.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="x" />')).status).toBe(404);
    expect((await sub2.del(`/v1/sessions/${sid}`)).status).toBe(404);
    expect((await op.get(`/v1/sessions/${sid}/ledger`)).status).toBe(200);
    expect((await admin.get(`/v1/sessions/${sid}/ledger`)).status).toBe(200);
    expect((await op.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="x" />')).status).toBe(403);
  });

  it('rejects bad bodies with 400 and error.code, oversized ones with 413', async () => {
    const bad = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { code: string; message: string; details: unknown } };
      expect(body.error.code).toBe(code);
      expect(typeof body.error.message).toBe('string');
      expect('details' in body.error).toBe(true);
    };
    await bad(await sub1.json('/v1/sessions', '{"project":'), 400, 'invalid_json');
    await bad(await sub1.json('/v1/sessions', { nope: 1 }), 400, 'invalid_body');
    await bad(await sub1.json('/v1/sessions', { approval: 'sometimes' }), 400, 'invalid_body');
    await bad(await sub1.json('/v1/sessions', { project: 'no-such-project' }), 400, 'invalid_policy');
    await bad(await sub1.json('/v1/sessions', { policy: { version: 1, rules: [{ id: 'x', tool: 'bash', decision: 'maybe' }] } }), 400, 'invalid_policy');
    await bad(await sub1.json('/v1/sessions', { files: { '../evil': 'x' } }), 400, 'invalid_files');
    await bad(await op.json('/v1/approvals/abc', { decision: 'perhaps' }), 400, 'invalid_body');
    await bad(await op.get('/v1/approvals?status=sometimes'), 400, 'invalid_query');
    const bigJson = await rawPost(svc.url!, '/v1/sessions', JSON.stringify({ files: { 'big.txt': 'x'.repeat(2 * 1024 * 1024) } }),
      { authorization: 'Bearer k-sub1', 'content-type': 'application/json' });
    expect([bigJson.status, JSON.parse(bigJson.body).error.code]).toEqual([413, 'payload_too_large']);
    const sid = await newSession();
    const huge = await rawPost(svc.url!, `/v1/sessions/${sid}/commands`, `<tf-write id="1" path="a">${'y'.repeat(16 * 1024 * 1024)}</tf-write>`,
      { authorization: 'Bearer k-sub1', 'content-type': 'text/plain' });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).error.code).toBe('payload_too_large');
    // Just under the limit is accepted (the parser's own 8 MiB body limit then applies).
    const fits = await sub1.text(`/v1/sessions/${sid}/commands`, `<tf-write id="1" path="a">${'y'.repeat(1024 * 1024)}</tf-write>`);
    expect(fits.status).toBe(200);
    const json = await fetch(`${svc.url}/v1/sessions/${sid}/commands`, { method: 'POST', headers: { authorization: 'Bearer k-sub1', 'content-type': 'application/json' }, body: '{}' });
    await bad(json, 415, 'unsupported_media_type');
  });

  it('seeds files (not commands: an event, never in the ledger), runs a turn, serves files and the ledger', async () => {
    const sid = await newSession(sub1, { files: { 'docs/outline.md': '# Outline\n', 'empty.txt': '' } });
    const res = await sub1.text(`/v1/sessions/${sid}/commands`, [
      'Some prose the parser ignores.',
      '<tf-write id="1" path="src/app.py">',
      'print("hello")',
      '</tf-write>',
      '<tf-bash id="2" cmd="python3 -c \'print(6*7)\' 2>/dev/null || echo 42" />',
      '<tf-read id="3" path="docs/outline.md" />',
      '<tf-edit id="4" path="src/app.py"><old>hello</old><new>world</new></tf-edit>',
    ].join('\n'));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: Record<string, unknown>[]; errors: unknown[] };
    expect(body.errors).toEqual([]);
    expect(body.results).toMatchObject([
      { id: '1', tool: 'write', status: 'succeeded', bytes_written: 15 },
      { id: '2', tool: 'bash', status: 'succeeded', exit_code: 0, stdout: '42\n' },
      { id: '3', tool: 'read', status: 'succeeded', stdout: '# Outline\n' },
      { id: '4', tool: 'edit', status: 'succeeded' },
    ]);
    const file = await sub1.get(`/v1/sessions/${sid}/files/src/app.py`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('print("world")\n');
    const dir = await sub1.get(`/v1/sessions/${sid}/files/docs`);
    expect(await dir.json()).toEqual({ entries: [{ name: 'outline.md', type: 'file', size: 10 }] });
    expect((await sub1.get(`/v1/sessions/${sid}/files/nope.txt`)).status).toBe(404);
    for (const target of [
      `/v1/sessions/${sid}/files/../../etc/passwd`, `/v1/sessions/${sid}/files/..%2f..%2fetc%2fpasswd`,
      `/v1/sessions/${sid}/files/%2e%2e/%2e%2e/etc/passwd`, `/v1/sessions/${sid}/files/%2fetc%2fpasswd`,
      `/v1/sessions/${sid}/files/src/../../x`,
      // Absolute-form and doubled-slash request targets reach the same guard (issue 9).
      `http://127.0.0.1/v1/sessions/${sid}/files/..%2f..`, `http://example.test:80/v1/sessions/${sid}/files/%2e%2e/%2e%2e/etc/passwd`,
      `//v1/sessions/${sid}/files/..%2f..%2fetc`,
    ]) {
      const r = await rawGet(svc.url!, target, 'k-sub1');
      expect([target, r.status]).toEqual([target, 403]);
      expect(JSON.parse(r.body).error.code).toBe('path_outside_workspace');
    }
    // Dot segments before the files path would make the raw and the routed reading differ.
    for (const target of [`/v1/./sessions/${sid}/files/..%2f..`, `/v1/sessions/${sid}/./files/..%2f..`, `/v1/x/../sessions/${sid}/files/..%2f..`]) {
      const r = await rawGet(svc.url!, target, 'k-sub1');
      expect([target, r.status]).toEqual([target, 400]);
      expect(JSON.parse(r.body).error.code).toBe('invalid_path');
    }
    const ledger = (await (await sub1.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: Record<string, unknown>[] };
    // The ledger holds the session's commands only, ids as their author gave them.
    expect(ledger.entries.map((e) => [e.turn, e.id, e.tool, e.status, e.flow])).toEqual([
      [1, '1', 'write', 'succeeded', 'api'], [1, '2', 'bash', 'succeeded', 'api'],
      [1, '3', 'read', 'succeeded', 'api'], [1, '4', 'edit', 'succeeded', 'api'],
    ]);
    const events = await readSse(`${svc.url}/v1/sessions/${sid}/events`, { authorization: 'Bearer k-sub1' }, (e) => e.event === 'command_finished' && e.data.record.id === '4');
    expect(events[0]).toMatchObject({ id: '1', event: 'files_seeded', data: { seq: 1, session_id: sid, paths: [{ path: 'docs/outline.md', bytes: 10 }, { path: 'empty.txt', bytes: 0 }] } });
    expect(events.filter((e) => e.event === 'files_seeded')).toHaveLength(1);
    expect(ledger.entries[0]).toMatchObject({ path: 'src/app.py', decision: 'allow', injected: false, content_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('records where each command\'s time went: timings parsed → admitted → queued → started → finished, ms ISO', async () => {
    const sid = await newSession(sub1);
    const before = new Date().toISOString();
    const res = await sub1.text(`/v1/sessions/${sid}/commands`, '<tf-write id="1" path="a.txt">a</tf-write><tf-bash id="2" cmd="exit 3" /><tf-touch id="3" path="b.txt" />');
    expect(res.status).toBe(200);
    const after = new Date().toISOString();
    const { entries } = (await (await sub1.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: { id: string; status: string; enqueued_at: string; started_at: string | null; finished_at: string | null; timings: Record<string, string> }[] };
    expect(entries.map((e) => e.status)).toEqual(['succeeded', 'failed', 'skipped']);
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    for (const e of entries.slice(0, 2)) {
      const t = e.timings;
      expect(Object.keys(t)).toEqual(['parsed_at', 'admitted_at', 'queued_at', 'started_at', 'finished_at']);
      for (const v of Object.values(t)) expect(v).toMatch(iso);
      // Every step in order, all within the request (ISO strings of one zone compare as times).
      const steps = [before, t.parsed_at, t.admitted_at, t.queued_at, t.started_at, t.finished_at, after];
      expect([...steps].sort()).toEqual(steps);
      expect([t.queued_at, t.started_at, t.finished_at]).toEqual([e.enqueued_at, e.started_at, e.finished_at]);
    }
    // The skipped one never started: no started_at, and the keys that are absent are left out, not null.
    expect(entries[2]!.timings).toEqual({ admitted_at: expect.stringMatching(iso), queued_at: entries[2]!.enqueued_at, parsed_at: expect.stringMatching(iso), finished_at: entries[2]!.finished_at });
    // The finish event carries the record's final timings too.
    const events = await readSse(`${svc.url}/v1/sessions/${sid}/events`, { authorization: 'Bearer k-sub1' }, (e) => e.event === 'command_finished' && e.data.record.id === '3');
    const finished = events.filter((e) => e.event === 'command_finished').map((e) => e.data.record.timings);
    expect(finished).toEqual(entries.map((e) => e.timings));
  });

  it('refuses seeded files the policy would not let a command write (400, nothing created)', async () => {
    const res = await sub1.json('/v1/sessions', { files: { 'ok.txt': 'x', 'secrets/key': 'k' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details: { path: string; decision: string }[] } };
    expect(body.error.code).toBe('invalid_files');
    expect(body.error.details).toMatchObject([{ path: 'secrets/key', decision: 'prompt', matched_rules: [{ id: 'secrets' }] }]);
  });

  it('reports a parse error and skips what follows it; a failure skips the rest of the turn', async () => {
    const sid = await newSession();
    const res = await sub1.text(`/v1/sessions/${sid}/commands`,
      '<tf-touch id="1" path="a" />\n<tf-write id="2">no path</tf-write>\n<tf-touch id="3" path="b" />');
    const body = (await res.json()) as { results: { id: string; status: string }[]; errors: { code: string; id?: string }[] };
    expect(res.status).toBe(200);
    expect(body.errors).toMatchObject([{ code: 'missing_path', id: '2' }]);
    expect(body.results.map((r) => [r.id, r.status])).toEqual([['1', 'succeeded'], ['3', 'skipped']]);
    const fail = (await (await sub1.text(`/v1/sessions/${sid}/commands`,
      '<tf-bash id="1" cmd="exit 3" />\n<tf-touch id="2" path="c" />')).json()) as { results: { status: string; exit_code?: number }[] };
    expect(fail.results).toMatchObject([{ status: 'failed', exit_code: 3 }, { status: 'skipped' }]);
    expect((await sub1.get(`/v1/sessions/${sid}/files/c`)).status).toBe(404);
    expect((await sub1.get(`/v1/sessions/${sid}/files/b`)).status).toBe(404);
  });

  it('DELETE removes the sandbox (204) and keeps the ledger', async () => {
    const sid = await newSession();
    await sub1.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="a" />');
    const name = `${boxes}${sid}`;
    expect(execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${name}$`]).toString().trim()).not.toBe('');
    const del = await sub1.del(`/v1/sessions/${sid}`);
    expect(del.status).toBe(204);
    expect(execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${name}$`]).toString().trim()).toBe('');
    const ledger = (await (await sub1.get(`/v1/sessions/${sid}/ledger`)).json()) as { entries: unknown[] };
    expect(ledger.entries).toHaveLength(1);
    const again = await sub1.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="b" />');
    expect(again.status).toBe(410);
    expect((await sub1.get(`/v1/sessions/${sid}/files/a`)).status).toBe(410);
    expect(execFileSync('docker', ['ps', '-aq', '--filter', `name=^/${name}$`]).toString().trim()).toBe('');
  });

  it('streams session events as SSE with seq ids, resumable with Last-Event-ID', async () => {
    const sid = await newSession();
    await sub1.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="a" />\n<tf-bash id="2" cmd="exit 1" />\n<tf-touch id="3" path="b" />');
    const read = async (headers: Record<string, string>, until: (events: { id: string; event: string; data: { seq: number; type: string; record?: { status: string } } }[]) => boolean) => {
      const ctl = new AbortController();
      const res = await fetch(`${svc.url}/v1/sessions/${sid}/events`, { headers: { authorization: 'Bearer k-sub1', ...headers }, signal: ctl.signal });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = res.body!.getReader();
      let buf = '';
      const events: { id: string; event: string; data: { seq: number; type: string; record?: { status: string } } }[] = [];
      while (!until(events)) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += new TextDecoder().decode(value);
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
          if (f.data) events.push({ id: f.id!, event: f.event!, data: JSON.parse(f.data) });
        }
      }
      ctl.abort();
      return events;
    };
    const all = await read({}, (e) => e.filter((x) => x.event === 'command_finished').length === 3);
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.data.seq)).toEqual(all.map((e) => Number(e.id)));
    expect(all.filter((e) => e.event === 'command_finished').map((e) => e.data.record!.status)).toEqual(['succeeded', 'failed', 'skipped']);
    const resumed = await read({ 'last-event-id': all[2]!.id }, (e) => e.length === all.length - 3);
    expect(resumed.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
    // Live: a new turn's events arrive on an open stream.
    const live = read({ 'last-event-id': all.at(-1)!.id }, (e) => e.some((x) => x.event === 'command_finished'));
    await new Promise((r) => setTimeout(r, 200));
    await sub1.text(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="c" />');
    expect((await live).map((e) => e.event)).toEqual(['command_queued', 'command_started', 'command_finished']);
    expect((await sub2.get(`/v1/sessions/${sid}/events`)).status).toBe(404);
  });
});
