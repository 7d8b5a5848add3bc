// examples/pipeline.sh, run as a pipeline would: against a service on the
// built-in replay model, with an API key. The script makes its sample
// repository, uploads it, submits with a validator, waits, takes the patch
// and applies it to a clean checkout; here its exit status and its report
// are checked, and the job it made is read back over REST.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const svc = suiteService('pipe-example', {
  THINKFLOW_POLICY_DIR: 'policies', THINKFLOW_API_KEYS: 'pipe-key:submitter',
  ...(process.env.THINKFLOW_SANDBOX_IMAGE ? { THINKFLOW_SANDBOX_IMAGE: process.env.THINKFLOW_SANDBOX_IMAGE } : {}),
});

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn('bash', [`${ROOT}examples/pipeline.sh`, ...args], {
    env: { ...process.env, OPENAI_BASE_URL: '', THINKFLOW_URL: svc.url!, THINKFLOW_API_KEY: 'pipe-key' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('examples/pipeline.sh', () => {
  it('takes the sample repository to a patch that applies to a clean checkout, after 2 validation rounds', async () => {
    const r = await run([]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/its test fails: fails/);
    expect(r.stderr).toMatch(/job job_\S+ succeeded; validation: 2 round\(s\), passed/);
    expect(r.stderr).toContain('patch: 4 file(s) changed');
    expect(r.stderr).toContain('git apply --check and git apply: ok');
    expect(r.stderr).toContain('the validator passes on the patched checkout');
    const jobId = /job (job_\S+) succeeded/.exec(r.stderr)![1]!;
    const job = await (await fetch(`${svc.url}/v1/jobs/${jobId}`, { headers: { authorization: 'Bearer pipe-key' } })).json() as any;
    expect(job).toMatchObject({ status: 'succeeded', validation: { rounds: 2, passed: true } });
    expect(job.changes).toMatchObject({ added: 1, modified: 2, deleted: 1 });
  }, 120_000);

  it('fails (exit 1) and says so when the job does not pass its validator', async () => {
    const r = await run(['', 'Fix the greeting in greet.sh so that test.sh passes.', 'false']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the job did not succeed \(thinkflow submit exited 1\): job_\S+ failed; validation: \d round\(s\), not passed/);
  }, 120_000);
});
