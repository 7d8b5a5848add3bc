import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PipelineError } from '../../../services/pipeline/errors.ts';
import { FilePolicyGate } from '../../../services/pipeline/policy-gate.ts';
import type { SessionMeta } from '../../../services/pipeline/sessions.ts';
import { checkValidator } from '../../../services/pipeline/validator-check.ts';

// A job's validator judged at submit with the session's layered policy and
// approval mode (the repository's policies/, no Redis).
let gate: FilePolicyGate;
beforeAll(async () => { gate = await FilePolicyGate.load(resolve(import.meta.dirname, '../../../policies')); });

const session = (approval: SessionMeta['approval'], policy: unknown = null): SessionMeta => ({
  session_id: `ses_v_${approval}_${policy ? 'p' : 'n'}`, owner: null, project: null, approval, policy, job_id: null,
  created_at: '', deleted_at: null,
});
const validator = (cmd: string) => ({ id: 'validate-1', tool: 'bash' as const, cmd, need_result: true });

function refusal(s: SessionMeta, cmd: string): PipelineError {
  try {
    checkValidator(gate, s, validator(cmd));
  } catch (err) {
    if (err instanceof PipelineError) return err;
    throw err;
  }
  throw new Error(`\`${cmd}\` was not refused`);
}

describe('checkValidator', () => {
  it('an allowed validator passes, in either approval mode', () => {
    expect(() => checkValidator(gate, session('never'), validator('grep -q fixed answer.txt'))).not.toThrow();
    expect(() => checkValidator(gate, session('on-request'), validator('npm test'))).not.toThrow();
  });

  it('a forbidden one is invalid_validator naming the rule', () => {
    const err = refusal(session('on-request'), 'make test && curl http://x');
    expect(err.code).toBe('invalid_validator');
    expect(err.message).toBe('the policy refuses the validator: forbid by rule no-network-tools (global) for `curl http://x`: the sandbox has no network; do not try');
    expect(err.details).toMatchObject({ cmd: 'make test && curl http://x', decision: 'forbid', rules: ['no-network-tools'] });
  });

  it('a session rule decides like any other layer', () => {
    const policy = { version: 1, rules: [{ id: 'no-make-here', tool: 'bash', command: ['make'], decision: 'forbid', justification: 'use npm test' }] };
    const err = refusal(session('never', policy), 'make check');
    expect(err.message).toContain('no-make-here (session)');
    expect(err.details).toMatchObject({ rules: ['no-make-here'] });
  });

  it('a prompt is refused under approval never (it could never run) and goes to an operator under on-request', () => {
    const err = refusal(session('never'), 'npm install left-pad');
    expect(err.message).toMatch(/^the policy refuses the validator: prompt by rule package-installs \(global\) for `npm install left-pad`: .*; .+/);
    expect(err.details).toMatchObject({ decision: 'prompt', rules: ['package-installs'] });
    expect(() => checkValidator(gate, session('on-request'), validator('npm install left-pad'))).not.toThrow();
  });
});
