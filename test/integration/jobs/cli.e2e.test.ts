// The CLI against a real `thinkflow serve` child process, the way outside
// pipelines use it: submit --wait, approvals, approve, with API keys.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { cleanupPrefix, removeSandboxes, sandboxPrefix, testPrefix } from '../pipeline/helpers.ts';
import { TRANSCRIPTS } from './transcripts.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const prefix = testPrefix('cli');
const boxes = sandboxPrefix('cli');
let model: ReplayModel;
let serve: ChildProcess;
let url = '';

beforeAll(async () => {
  model = await startReplayModel({ transcripts: TRANSCRIPTS });
  serve = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--port', '0'], {
    cwd: ROOT,
    env: {
      ...process.env, OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted', THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_SANDBOX_PREFIX: boxes,
      THINKFLOW_API_KEYS: 'sub-key:submitter,op-key:operator,other-key:submitter',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  url = await new Promise<string>((resolve, reject) => {
    let log = '';
    serve.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    serve.on('exit', (code) => reject(new Error(`serve exited (${code}): ${log}`)));
  });
});
afterAll(async () => {
  serve?.kill('SIGTERM');
  await new Promise((r) => serve?.once('exit', r));
  await model?.close();
  await cleanupPrefix(prefix);
  await removeSandboxes(boxes);
});

/** Async on purpose: the scripted model lives in this process and must keep answering. */
function cli(key: string, ...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), ...args], { cwd: ROOT, env: { ...process.env, THINKFLOW_URL: url, THINKFLOW_API_KEY: key } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.on('close', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); }));
}

describe('thinkflow CLI against a running service', () => {
  it('submit --wait follows the job to the end and exits 0', async () => {
    const r = await cli('sub-key', 'submit', 'five files please', '--wait');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/status\s+succeeded/);
    expect(r.stdout).toMatch(/api_calls\s+1/);
    expect(r.stderr).toMatch(/succeeded\s+write\s+pkg\/sub\/f5\.txt/);
  });

  it('cancel stops a running job; a second cancel says it is already cancelled', async () => {
    const res = await fetch(`${url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sub-key' }, body: '{"task":"take your time"}' });
    const { job_id } = await res.json();
    await new Promise((r) => setTimeout(r, 300));
    const first = await cli('sub-key', 'cancel', job_id);
    expect(first.status, first.stderr).toBe(0);
    for (let i = 0; i < 100; i++) {
      const job = await (await fetch(`${url}/v1/jobs/${job_id}`, { headers: { authorization: 'Bearer sub-key' } })).json();
      if (job.status === 'cancelled') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await cli('sub-key', 'cancel', job_id)).stdout).toContain('already cancelled');
    expect((await cli('sub-key', 'cancel', 'job_nope')).status).toBe(1);
    expect((await cli('sub-key', 'cancel')).status).toBe(2);
  });

  it('say, pause and resume steer a running job; another submitter cannot', async () => {
    const auth = { authorization: 'Bearer sub-key' };
    const res = await fetch(`${url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: '{"task":"take your time"}' });
    const { job_id } = await res.json();
    const status = async () => (await (await fetch(`${url}/v1/jobs/${job_id}`, { headers: auth })).json()).status as string;

    const said = await cli('sub-key', 'say', job_id, 'Keep it short.');
    expect(said.status, said.stderr).toBe(0);
    expect(said.stdout).toMatch(/joins the next model call/);
    const foreign = await cli('other-key', 'pause', job_id);
    expect(foreign.status).toBe(1);
    expect(foreign.stderr).toContain('no such job');
    const paused = await cli('sub-key', 'pause', job_id);
    expect(paused.status, paused.stderr).toBe(0);
    expect(paused.stdout).toBe(`${job_id}: paused\n`);
    expect(await status()).toBe('paused');
    const resumed = await cli('sub-key', 'resume', job_id);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed \(running\)/);
    const notPaused = await cli('sub-key', 'resume', job_id);
    expect(notPaused.status).toBe(1);
    expect(notPaused.stderr).toMatch(/job_not_paused/);

    // The interrupt stops the slow stream: the next model call carries it (and the first message, if no call took it yet).
    expect((await cli('sub-key', 'say', job_id, 'Stop and listen.', '--interrupt')).status).toBe(0);
    const carrying = (text: string) => model.log.map((r) => JSON.stringify(r.messages)).filter((m) => m.includes(text));
    for (let i = 0; i < 100 && carrying('Stop and listen.').length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(carrying('Stop and listen.').length).toBeGreaterThan(0);
    expect(carrying('Keep it short.').length).toBeGreaterThan(0);

    expect((await cli('sub-key', 'cancel', job_id)).status).toBe(0);
    for (let i = 0; i < 100 && (await status()) !== 'cancelled'; i++) await new Promise((r) => setTimeout(r, 100));
    const late = await cli('sub-key', 'pause', job_id);
    expect(late.status).toBe(1);
    expect(late.stderr).toMatch(/job_finished/);
    expect((await cli('sub-key', 'say', job_id)).status).toBe(2);
  });

  it('an operator lists and approves what a job waits for; the job then succeeds', async () => {
    // The shipped policies allow touch; the session policy that makes it ask goes through REST.
    const policy = 'version: 1\nrules:\n  - id: guarded\n    tool: touch\n    path: "guarded/**"\n    decision: prompt\n    justification: needs a person\n';
    const res = await fetch(`${url}/v1/jobs`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sub-key' },
      body: JSON.stringify({ task: 'touch the guarded file', approval: 'on-request', policy }),
    });
    const { job_id } = await res.json();
    let listed = { approvals: [] as Array<{ token: string; job_id: string }> };
    for (let i = 0; i < 100 && !listed.approvals.some((a) => a.job_id === job_id); i++) {
      listed = JSON.parse((await cli('op-key', 'approvals', '--json')).stdout);
      await new Promise((r) => setTimeout(r, 100));
    }
    const token = listed.approvals.find((a) => a.job_id === job_id)!.token;
    expect((await cli('sub-key', 'approve', token)).status).toBe(1);
    expect((await cli('op-key', 'approve', token)).status).toBe(0);
    const again = await cli('op-key', 'approve', token);
    expect(again.status).toBe(1);
    expect(again.stdout + again.stderr).toMatch(/already answered or expired/);
    for (let i = 0; i < 100; i++) {
      const job = await (await fetch(`${url}/v1/jobs/${job_id}`, { headers: { authorization: 'Bearer sub-key' } })).json();
      if (job.status === 'succeeded') return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the approved job did not succeed');
  });
});
