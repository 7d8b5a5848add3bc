// Per-key caps of API.md (issue 9): one key cannot open unbounded sessions,
// keep unbounded sandboxes busy or hold unbounded event streams; other keys
// are unaffected, and a freed slot can be used again.
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import Docker from 'dockerode';
import { suiteService } from '../suite-service.ts';
import { containerName } from '../../../services/sandbox/index.ts';
import { client, newSession } from './helpers.ts';

const svc = suiteService('caps', {
  THINKFLOW_API_KEYS: 'k-a:submitter,k-b:submitter,k-c:submitter', THINKFLOW_SANDBOX_IDLE_STOP_S: '1', THINKFLOW_SANDBOX_REAP_INTERVAL_S: '1',
  THINKFLOW_MAX_SESSIONS_PER_KEY: '3', THINKFLOW_MAX_RUNNING_PER_KEY: '1', THINKFLOW_MAX_STREAMS_PER_KEY: '2',
});
const { boxes } = svc;
const docker = new Docker();
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;

beforeAll(() => {
  a = client(svc.url!, 'k-a');
  b = client(svc.url!, 'k-b');
});

const session = (c: typeof a) => newSession(c);

async function expectTooMany(res: Response, cap: string): Promise<void> {
  expect(res.status).toBe(429);
  const body = (await res.json()) as { error: { code: string; message: string; details: { cap: string } } };
  expect(body.error.code).toBe('too_many');
  expect(body.error.details.cap).toBe(cap);
  expect(body.error.message).toContain(cap);
}

/** Opens an SSE stream with a plain Node client; resolves with its status and a closer. */
function openStream(path: string, key: string): Promise<{ status: number; close: () => void }> {
  const u = new URL(svc.url!);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: u.hostname, port: u.port, path, agent: false, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
      res.on('data', () => {});
      res.on('error', () => {});
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
    });
    req.on('error', (err) => (err.message.includes('aborted') || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
  });
}

describe('per-key caps', () => {
  it('open sessions: over the cap is 429 too_many; other keys unaffected; a deleted one frees its slot', async () => {
    const sids = [await session(a), await session(a), await session(a)];
    await expectTooMany(await a.json('/v1/sessions', {}), 'THINKFLOW_MAX_SESSIONS_PER_KEY');
    await session(b);
    // A job opens a session too: the same cap holds for POST /v1/jobs.
    await expectTooMany(await a.json('/v1/jobs', { task: 'anything' }), 'THINKFLOW_MAX_SESSIONS_PER_KEY');
    expect((await a.del(`/v1/sessions/${sids[0]}`)).status).toBe(204);
    sids[0] = await session(a);
    for (const sid of sids) await a.del(`/v1/sessions/${sid}`);
  });

  it('sessions with a live container: another session is 429 while one is live; a deleted one frees its slot', async () => {
    const [s1, s2] = [await session(a), await session(a)];
    expect((await a.text(`/v1/sessions/${s1}/commands`, '<tf-bash id="1" cmd="echo one" />')).status).toBe(200);
    // s1's container stays live after its turn (until stopped for idleness): s2 may not start one.
    await expectTooMany(await a.text(`/v1/sessions/${s2}/commands`, '<tf-bash id="1" cmd="echo hi" />'), 'THINKFLOW_MAX_RUNNING_PER_KEY');
    await expectTooMany(await a.json('/v1/jobs', { task: 'anything' }), 'THINKFLOW_MAX_RUNNING_PER_KEY');
    // The live session itself goes on; other keys are unaffected.
    expect((await a.text(`/v1/sessions/${s1}/commands`, '<tf-bash id="1" cmd="echo again" />')).status).toBe(200);
    const other = await session(b);
    expect((await b.text(`/v1/sessions/${other}/commands`, '<tf-bash id="1" cmd="echo b" />')).status).toBe(200);
    expect((await a.del(`/v1/sessions/${s1}`)).status).toBe(204);
    expect((await a.text(`/v1/sessions/${s2}/commands`, '<tf-bash id="1" cmd="echo hi" />')).status).toBe(200);
    await a.del(`/v1/sessions/${s2}`);
    await b.del(`/v1/sessions/${other}`);
  });

  it('an idle container is stopped by the reaper, which frees its place under the cap', async () => {
    const c = client(svc.url!, 'k-c');
    const [s1, s2] = [await session(c), await session(c)];
    expect((await c.text(`/v1/sessions/${s1}/commands`, '<tf-write id="1" path="kept.txt">kept</tf-write>')).status).toBe(200);
    await expectTooMany(await c.text(`/v1/sessions/${s2}/commands`, '<tf-bash id="1" cmd="true" />'), 'THINKFLOW_MAX_RUNNING_PER_KEY');
    // Stopped: with a filesystem per workspace the container is removed (its image kept), else stopped.
    const isRunning = () => docker.getContainer(containerName(boxes, s1)).inspect()
      .then((info) => info.State.Running, (err: { statusCode?: number }) => {
        if (err.statusCode === 404) return false;
        throw err;
      });
    let running = true;
    for (let i = 0; i < 60 && running; i++) {
      await new Promise((r) => setTimeout(r, 250));
      running = await isRunning();
    }
    expect(running).toBe(false);
    await new Promise((r) => setTimeout(r, 1_200)); // past the live window (idle stop 1 s + reaper period 1 s)
    expect((await c.text(`/v1/sessions/${s2}/commands`, '<tf-bash id="1" cmd="true" />')).status).toBe(200);
    // The stopped session comes back with its workspace on its next use (when a place is free).
    await c.del(`/v1/sessions/${s2}`);
    expect(await (await c.get(`/v1/sessions/${s1}/files/kept.txt`)).text()).toBe('kept');
    await c.del(`/v1/sessions/${s1}`);
  });

  it('open event streams: the third is 429; closing one frees a slot; other keys unaffected', async () => {
    const sid = await session(a);
    const path = `/v1/sessions/${sid}/events`;
    const s1 = await openStream(path, 'k-a');
    const s2 = await openStream(path, 'k-a');
    expect([s1.status, s2.status]).toEqual([200, 200]);
    await expectTooMany(await a.get(path), 'THINKFLOW_MAX_STREAMS_PER_KEY');
    const otherSid = await session(b);
    const sb = await openStream(`/v1/sessions/${otherSid}/events`, 'k-b');
    expect(sb.status).toBe(200);
    s1.close();
    let again = { status: 0, close: () => {} };
    for (let i = 0; i < 50 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await openStream(path, 'k-a');
      if (again.status !== 200) again.close();
    }
    expect(again.status).toBe(200);
    for (const s of [s2, sb, again]) s.close();
    await a.del(`/v1/sessions/${sid}`);
    await b.del(`/v1/sessions/${otherSid}`);
  });
});
