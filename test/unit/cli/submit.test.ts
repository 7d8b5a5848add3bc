// `thinkflow submit` end to end: the real bin against a fake API — request
// body, printed job, the event stream (with one broken connection resumed by
// Last-Event-ID), final report, exit codes, errors and Ctrl-C.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobView, startFakeApi, type FakeApi } from './fake-api.ts';
import { run, script } from './helpers.ts';

let api: FakeApi | undefined;
let dir: string;
beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'tf-cli-')); });
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });
afterEach(async () => { await api?.close(); api = undefined; });

const jobPosts = (a: FakeApi) => a.requests.filter((r) => r.method === 'POST' && r.path === '/v1/jobs');

describe('thinkflow submit', () => {
  it('posts the task with its options and prints the job with its URLs', async () => {
    api = await startFakeApi({ key: 'k-sub' });
    const local = join(dir, 'outline.md');
    await writeFile(local, '# Outline\n');
    const r = await run(['submit', 'Create a Vite skeleton', '--approval', 'on-request', '--project', 'web-demo', '--flow', 'react',
      '--file', `docs/outline.md=${local}`, '--max-turns', '3', '--timeout', '60'], { THINKFLOW_URL: api.url, THINKFLOW_API_KEY: 'k-sub' });
    expect(r.code, r.stderr).toBe(0);
    const [post] = jobPosts(api);
    expect(post?.headers.authorization).toBe('Bearer k-sub');
    expect(JSON.parse(post!.body)).toEqual({
      task: 'Create a Vite skeleton', project: 'web-demo', approval: 'on-request', flow: 'react',
      limits: { max_turns: 3, timeout_s: 60 }, files: { 'docs/outline.md': '# Outline\n' },
    });
    expect(r.stdout).toContain('job_id     job_1');
    expect(r.stdout).toContain('session_id ses_1');
    expect(r.stdout).toContain('status     queued');
    expect(r.stdout).toContain(`${api.url}/v1/jobs/job_1\n`);
    expect(r.stdout).toContain(`${api.url}/v1/jobs/job_1/events\n`);
    expect(api.eventConnections).toEqual([]); // no --wait, no streaming
  });

  it('--idempotency-key K sends the Idempotency-Key header (no key, no header)', async () => {
    api = await startFakeApi();
    const r = await run(['submit', 'x', '--idempotency-key', 'deploy-42 #1'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(0);
    await run(['submit', 'x'], { THINKFLOW_URL: api.url });
    expect(jobPosts(api).map((p) => p.headers['idempotency-key'])).toEqual(['deploy-42 #1', undefined]);
  });

  it('--url and --key flags win over the environment', async () => {
    api = await startFakeApi({ key: 'k-flag' });
    const r = await run(['submit', 'x', '--json', '--url', `${api.url}/`, '--key', 'k-flag'], { THINKFLOW_URL: 'http://127.0.0.1:1', THINKFLOW_API_KEY: 'wrong' });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ job_id: 'job_1', session_id: 'ses_1', status: 'queued', job_url: `${api.url}/v1/jobs/job_1`, events_url: `${api.url}/v1/jobs/job_1/events` });
  });

  it('--wait --json: every event exactly once across a broken connection, resumed with Last-Event-ID; the job last', async () => {
    const events = script(jobView());
    api = await startFakeApi({ events, dropAfter: 8 });
    const r = await run(['submit', 'make a thing', '--wait', '--json'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(0);
    expect(api.eventConnections).toEqual([undefined, '8']);
    expect(r.stderr).toMatch(/reconnecting after event 8/);
    const lines = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ job_id: 'job_1', status: 'queued' });
    const streamed = lines.slice(1, -1) as { id: string; event: string; data: { seq: number } }[];
    expect(streamed.map((e) => e.event)).toEqual(events.map((e) => e.type));
    expect(streamed.map((e) => e.data.seq)).toEqual(events.map((_, i) => i + 1));
    expect(streamed.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
    expect(streamed[7]!.data).toMatchObject({ approval: { token: 'tok-abc' } });
    expect(lines.at(-1)).toEqual(jobView());
  });

  it('--wait: live progress on stderr, the final job on stdout, exit 1 when the job failed', async () => {
    const failed = jobView({ status: 'failed', error: 'max_turns (2) reached before the model finished', final_text: 'partial' });
    api = await startFakeApi({ events: script(failed), dropAfter: 5, job: failed });
    const r = await run(['submit', 'make a thing', '--wait'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('── turn 1 (api call 1)');
    expect(r.stderr).toMatch(/\[1\] parsed +write {2}src\/a\.ts/);
    expect(r.stderr).toMatch(/\[1\] succeeded +write {2}src\/a\.ts {2}\(4 ms\)/);
    expect(r.stderr).toMatch(/\[2\] needs approval {2}bash {2}rm -rf build {2}\(rules: rm-anything\)/);
    expect(r.stderr).toContain('thinkflow approve tok-abc');
    expect(r.stderr).toMatch(/\[2\] approval reject by key-ops: not today/);
    expect(r.stderr).toMatch(/\[2\] rejected +bash {2}rm -rf build {2}\(not today\)/);
    expect(r.stderr).toContain('parse error (text): unclosed_tag: tf-write 3 never closed [command 3]');
    expect(r.stderr).toContain('text: "Creating the file" (18 chars)');
    expect(r.stderr).toContain('turn 2 ended: done');
    expect(r.stderr).toMatch(/reconnecting after event 5/);
    // Each event printed once: the resumed stream repeats nothing.
    expect(r.stderr.match(/\[1\] succeeded/g)).toHaveLength(1);
    expect(r.stdout).toContain('status     failed');
    expect(r.stdout).toContain('api_calls  2  (turns 2)');
    expect(r.stdout).toContain('usage      prompt 120, completion 45, total 165 tokens (estimated)');
    expect(r.stdout).toContain('commands   3 total: 2 succeeded, 1 failed, 0 skipped, 0 forbidden, 0 rejected');
    expect(r.stdout).toContain('error      max_turns (2) reached before the model finished');
    expect(r.stdout).toContain('built-in replay model');
    expect(r.stdout).toMatch(/final_text\n {2}partial\n$/);
  });

  it('echoes --url in the suggested approve command when it was given as a flag', async () => {
    api = await startFakeApi({ events: script(jobView()) });
    const r = await run(['submit', 't', '--wait', '--url', api.url], {});
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`thinkflow approve tok-abc --url ${api.url}`);
  });

  it('gives up after bounded reconnections when the stream keeps breaking', async () => {
    api = await startFakeApi({ events: script(jobView()), alwaysDrop: true });
    const r = await run(['submit', 't', '--wait'], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('lost the event stream of job job_1 after 5 reconnections');
    expect(api.eventConnections).toHaveLength(6);
  });

  it('Ctrl-C while waiting leaves the job running and says how to cancel it', async () => {
    api = await startFakeApi({ events: script(jobView()), hangAfter: 3 });
    let stderr = '';
    const r = await run(['submit', 't', '--wait'], { THINKFLOW_URL: api.url, THINKFLOW_API_KEY: 'k' }, (child) => {
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        // Once: a second SIGINT after the handler is gone would kill the process outright.
        if (!child.killed && stderr.includes('[1] parsed')) child.kill('SIGINT');
      });
    });
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain('job job_1 is still running');
    expect(r.stderr).toContain('cancel: thinkflow cancel job_1');
    expect(r.stderr).toContain(`(or curl -X POST -H "Authorization: Bearer $THINKFLOW_API_KEY" ${api.url}/v1/jobs/job_1/cancel)`);
    expect(api.requests.some((q) => q.path.endsWith('/cancel'))).toBe(false);
  });

  it('an API error is shown as CODE: message, exit 1', async () => {
    api = await startFakeApi();
    const r = await run(['submit', 'boom'], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('thinkflow submit: invalid_body: task is not acceptable\n');
  });

  it('a wrong key is the API\'s 401, exit 1', async () => {
    api = await startFakeApi({ key: 'right' });
    const r = await run(['submit', 't'], { THINKFLOW_URL: api.url, THINKFLOW_API_KEY: 'wrong' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('unauthorized: unknown API key');
  });

  it('says the API is unreachable when nothing listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const url = `http://127.0.0.1:${port}`;
    const r = await run(['submit', 't', '--wait'], { THINKFLOW_URL: url });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`thinkflow submit: cannot reach the ThinkFlow API at ${url} (is \`thinkflow serve\` running?)\n`);
  });

  it.each([
    [[], 'a TASK is required'],
    [['   '], 'a TASK is required'],
    [['a', 'b'], "one TASK only (quote it); unexpected 'b'"],
    [['t', '--approval', 'sometimes'], "--approval must be never or on-request, got 'sometimes'"],
    [['t', '--flow', 'langchain'], "--flow must be thinkflow or react, got 'langchain'"],
    [['t', '--max-turns', '0'], "--max-turns must be a whole number >= 1, got '0'"],
    [['t', '--timeout', '1.5'], "--timeout must be a whole number >= 1, got '1.5'"],
    [['t', '--file', 'no-equals-sign'], "--file takes path=localfile, got 'no-equals-sign'"],
    [['t', '--file', 'a.md=/nonexistent/thinkflow-cli-test'], 'cannot read /nonexistent/thinkflow-cli-test (ENOENT)'],
    [['t', '--url', 'ftp://x'], 'must be http(s)'],
    [['t', '--frobnicate'], "Unknown option '--frobnicate'"],
    [['t', '--idempotency-key', 'k'.repeat(256)], '--idempotency-key must be 1 to 255 printable ASCII characters'],
    [['t', '--idempotency-key', 'naïve'], '--idempotency-key must be 1 to 255 printable ASCII characters'],
  ])('bad arguments %j: exit 2 with the reason and the usage line', async (args, reason) => {
    api = await startFakeApi();
    const r = await run(['submit', ...args], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(reason);
    expect(r.stderr).toContain('usage: thinkflow submit "TASK"');
    expect(api.requests).toEqual([]);
  });
});
