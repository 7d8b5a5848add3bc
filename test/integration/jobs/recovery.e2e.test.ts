// An API process that dies mid-job (kill -9): another API process fails the
// job with the reason once the dead runner's heartbeat expires, and the job
// does not hang in `running` forever.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../../../services/main/index.ts';
import { startReplayModel } from '../../../services/replay-model/server.ts';
import { cleanupPrefix, removeSandboxes, sandboxPrefix, testConfig, testPrefix } from '../pipeline/helpers.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanups.reverse()) await f().catch(() => {});
});

function serveChild(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--port', '0'], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(async () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return new Promise((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve({ child, url: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`serve exited early (${code}): ${log}`)));
  });
}

describe('job recovery', () => {
  it('a job whose API process was killed is failed by another API process, with the reason', async () => {
    const prefix = testPrefix('recover');
    const boxes = sandboxPrefix('recover');
    const model = await startReplayModel({
      transcripts: [{ name: 'slow', match: 'slow', delay_ms: 100, chunk: 2, turns: [{ reasoning: `<tf-write id="1" path="a.txt">\n${'x'.repeat(400)}\n</tf-write>`, text: 'done' }] }],
    });
    cleanups.push(() => model.close(), () => cleanupPrefix(prefix), () => removeSandboxes(boxes));
    const cfg = testConfig(prefix, { PORT: '0', THINKFLOW_SANDBOX_PREFIX: boxes, OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted', THINKFLOW_RUNNER_TTL_S: '2' });
    const env = {
      REDIS_URL: cfg.redisUrl, THINKFLOW_REDIS_PREFIX: prefix, THINKFLOW_POLICY_DIR: cfg.policyDir, THINKFLOW_SANDBOX_PREFIX: boxes,
      OPENAI_BASE_URL: model.baseUrl, THINKFLOW_MODEL: 'scripted', THINKFLOW_RUNNER_TTL_S: '2',
    };
    const first = await serveChild(env);
    const res = await fetch(`${first.url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"task":"a slow job"}' });
    const { job_id } = await res.json();
    for (let i = 0; i < 100; i++) {
      if ((await (await fetch(`${first.url}/v1/jobs/${job_id}`)).json()).status === 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    first.child.kill('SIGKILL');

    const second = await startService(cfg, {});
    cleanups.push(() => second.close());
    let job: Record<string, any> = {};
    for (let i = 0; i < 200; i++) {
      job = await (await fetch(`${second.url}/v1/jobs/${job_id}`)).json();
      if (job.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job.status).toBe('failed');
    expect(job.error).toBe('the process running this job stopped before it finished');
    expect(job.finished_at).toEqual(expect.any(String));
    // The SSE stream of the job ends too: job_finished was appended.
    const events = await (await fetch(`${second.url}/v1/jobs/${job_id}/events`, { signal: AbortSignal.timeout(10_000) })).text();
    expect(events).toContain('event: job_finished');
  }, 60_000);
});
