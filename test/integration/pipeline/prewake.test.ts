import Docker from 'dockerode';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';
import { containerName, frozenNow } from '../../../services/sandbox/index.ts';
import { client, newSession } from './helpers.ts';

// A session idle past THINKFLOW_IDLE_PAUSE_S has its container paused; the
// worker marks it in the session's meta hash (pipeline/pause-marks.ts), and the
// next request for the session thaws it at once (Pipeline.prewake), before its
// commands are parsed and recorded, not when one reaches the container. Real
// Redis, Docker and the REST API.
const svc = suiteService('wake', { THINKFLOW_IDLE_PAUSE_S: '1' });
let api: ReturnType<typeof client>;
beforeAll(() => { api = client(svc.url!); });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const box = (sid: string) => new Docker().getContainer(containerName(svc.boxes, sid));
/** Frozen either way (`docker pause`, or its cgroup freezer written directly, which Docker's flag does not show). */
const frozen = async (sid: string) => frozenNow(await box(sid).inspect());
const pausedMark = (sid: string) => svc.handle.runtime.redis.hget(svc.handle.runtime.keys.sessionMeta(sid), 'paused_at');

async function until(what: string, ok: () => Promise<boolean>, withinMs: number): Promise<number> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > withinMs) throw new Error(`${what}: not within ${withinMs} ms`);
    await sleep(10);
  }
  return Date.now() - t0;
}

async function pausedSession(file: string): Promise<string> {
  const sid = await newSession(api);
  const r = await (await api.text(`/v1/sessions/${sid}/commands`, `<tf-write id="1" path="${file}">kept</tf-write>`)).json() as { results: { status: string }[] };
  expect(r.results[0]!.status).toBe('succeeded');
  await until('paused', async () => frozen(sid), 10_000);
  await until('marked', async () => (await pausedMark(sid)) !== null, 2_000);
  return sid;
}

describe('a paused sandbox is thawed ahead of the command that needs it', () => {
  it('a request thaws it even when none of its commands reaches the container (a parse error), and the mark goes', async () => {
    const sid = await pausedSession('a.txt');
    expect(Number(await pausedMark(sid))).toBeGreaterThan(Date.now() - 60_000);
    // Nothing of this body runs in the sandbox: only the request itself can have thawed it.
    const res = await api.text(`/v1/sessions/${sid}/commands`, '<tf-nonsense id="1" />');
    expect(((await res.json()) as { errors: unknown[] }).errors).toHaveLength(1);
    await until('thawed', async () => !(await frozen(sid)), 1_000);
    await until('unmarked', async () => (await pausedMark(sid)) === null, 1_000);
    // The session is no longer paused to anyone reading it, and GET does not show the mark either way.
    expect(Object.keys(await (await api.get(`/v1/sessions/${sid}`)).json() as object)).not.toContain('paused_at');
  });

  it('the next command after a pause answers with the file intact', async () => {
    const sid = await pausedSession('b.txt');
    const r = await (await api.text(`/v1/sessions/${sid}/commands`, '<tf-read id="2" path="b.txt" />')).json() as { results: { status: string; stdout?: string }[] };
    expect(r.results[0]).toMatchObject({ status: 'succeeded', stdout: 'kept' });
    expect((await box(sid).inspect()).State).toMatchObject({ Running: true, Paused: false });
    expect(await frozen(sid)).toBe(false);
  });

  it('a GET of the ledger does not thaw it (only what needs the sandbox does)', async () => {
    const sid = await pausedSession('c.txt');
    expect((await api.get(`/v1/sessions/${sid}/ledger`)).status).toBe(200);
    await sleep(300);
    expect(await frozen(sid)).toBe(true);
    expect(await pausedMark(sid)).not.toBeNull();
  });

  it('a deleted session is never marked again by a late pause (the hash is not made anew)', async () => {
    const sid = await pausedSession('d.txt');
    const { redis, keys } = svc.handle.runtime;
    await redis.del(keys.sessionMeta(sid)); // as retention leaves it: gone
    expect(await redis.pauseMark(keys.sessionMeta(sid), Date.now())).toBe(12); // ScriptCode.MISSING
    expect(await redis.exists(keys.sessionMeta(sid))).toBe(0);
  });
});
