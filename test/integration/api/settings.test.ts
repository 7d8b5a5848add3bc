import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { servicesForSuite } from '../suite-service.ts';

// The service's own settings from the env schema (API.md Configuration,
// PROTOCOL.md §1 and §3): the model has no silent default, the parser of
// /commands and of jobs follows THINKFLOW_LEGACY_TAGS and
// THINKFLOW_MAX_TAG_BODY_BYTES, the sandbox image comes from the config.

const startService = servicesForSuite('settings');

async function service(env: Record<string, string>) {
  const svc = await startService(env);
  const post = async (path: string, body: string, type = 'text/plain') =>
    (await fetch(`${svc.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body })).json() as Promise<any>;
  const session = async () => (await post('/v1/sessions', '{}', 'application/json')).session_id as string;
  return { svc, post, session };
}

describe('service settings', () => {
  it('`thinkflow serve` refuses to start with OPENAI_BASE_URL and no THINKFLOW_MODEL, saying so', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', PORT: '0' };
    delete env.THINKFLOW_MODEL;
    const r = spawnSync(process.execPath, ['bin/thinkflow.mjs', 'serve'], { env, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/THINKFLOW_MODEL is unset but OPENAI_BASE_URL is set/);
  });

  it('legacy tags are text by default and commands with THINKFLOW_LEGACY_TAGS=true; the tag body limit is a setting', async () => {
    const off = await service({});
    const sidOff = await off.session();
    const text = '<touch id="1" path="legacy.txt" />\n<tf-write id="2" path="big.txt">\n0123456789abcdefghij\n</tf-write>\n';
    expect(await off.post(`/v1/sessions/${sidOff}/commands`, text)).toMatchObject({ results: [{ id: '2', status: 'succeeded' }], errors: [] });

    const on = await service({ THINKFLOW_LEGACY_TAGS: 'true', THINKFLOW_MAX_TAG_BODY_BYTES: '16' });
    const sidOn = await on.session();
    const out = await on.post(`/v1/sessions/${sidOn}/commands`, text);
    expect(out.results).toMatchObject([{ id: '1', tool: 'touch', status: 'succeeded' }]);
    expect(out.errors).toMatchObject([{ code: 'too_large', id: '2' }]);
  });

  it('THINKFLOW_SANDBOX_IMAGE from the config is the image sessions run', async () => {
    const s = await service({ THINKFLOW_SANDBOX_IMAGE: 'thinkflow/no-such-image:contract-test' });
    const sid = await s.session();
    const out = await s.post(`/v1/sessions/${sid}/commands`, '<tf-touch id="1" path="x" />');
    expect(out.results).toMatchObject([{ id: '1', status: 'failed' }]);
    expect(out.results[0].error).toMatch(/sandbox image thinkflow\/no-such-image:contract-test is missing/);
  });
});
