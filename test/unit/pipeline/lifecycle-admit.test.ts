import { beforeAll, describe, expect, it } from 'vitest';
import { grantFor, NEVER_REASON, type Grant } from '../../../services/policy/index.ts';
import type { Command } from '../../../services/protocol/index.ts';
import { admit } from '../../../services/pipeline/lifecycle/admit.ts';
import { FilePolicyGate } from '../../../services/pipeline/policy-gate.ts';
import type { SessionMeta } from '../../../services/pipeline/sessions.ts';
import { policyDir } from '../../integration/pipeline/helpers.ts';

// admit() with the real policy engine (files on disk, no Redis): bash `rm`
// prompts, `curl` is forbidden, writes under secrets/ prompt.
let gate: FilePolicyGate;
beforeAll(async () => { gate = await FilePolicyGate.load(policyDir()); });

const session = (approval: SessionMeta['approval'], policy: unknown = null): SessionMeta => ({
  session_id: `ses_${approval}_${policy ? 'p' : 'n'}`, owner: null, project: null, approval, policy, job_id: null,
  created_at: '2026-01-01T00:00:00.000Z', deleted_at: null,
});
const bash = (cmd: string): Command => ({ id: '1', tool: 'bash', cmd, need_result: false });
const write = (path: string): Command => ({ id: '1', tool: 'write', path, content: 'x', need_result: false });

describe('admit: policy + grants + approval mode → run | ask | refuse', () => {
  it('allow runs', () => {
    const a = admit(gate, session('never'), bash('echo hi'), []);
    expect(a).toMatchObject({ action: 'run', evaluation: { decision: 'allow' } });
  });

  it('forbid refuses in every mode, with the rule\'s reason and code forbidden', () => {
    for (const mode of ['never', 'on-request'] as const) {
      const a = admit(gate, session(mode), bash('curl http://x'), []);
      expect(a.action).toBe('refuse');
      if (a.action !== 'refuse') continue;
      expect(a.code).toBe('forbidden');
      expect(a.reason).toBe(a.evaluation.reason);
      expect(a.evaluation.matched_rules.map((r) => r.id)).toContain('no-curl');
    }
  });

  it('the hard invariant keeps its own code', () => {
    const a = admit(gate, session('on-request'), write('../etc/passwd'), []);
    expect(a).toMatchObject({ action: 'refuse', code: 'path_outside_workspace' });
    if (a.action === 'refuse') expect(a.reason.startsWith('path_outside_workspace')).toBe(true);
  });

  it('prompt asks under on-request and is refused under never', () => {
    expect(admit(gate, session('on-request'), bash('rm -f x'), [])).toMatchObject({ action: 'ask', evaluation: { decision: 'prompt' } });
    expect(admit(gate, session('never'), bash('rm -f x'), [])).toMatchObject({ action: 'refuse', code: 'forbidden', reason: NEVER_REASON });
    expect(admit(gate, session('on-request'), write('secrets/k'), [])).toMatchObject({ action: 'ask' });
  });

  it('a session grant lets a prompting command run, in either mode; a grant never lifts a forbid', () => {
    const cmd = write('secrets/k');
    const grant = grantFor(cmd, gate.evaluate(session('never'), cmd, [])) as Grant;
    expect(admit(gate, session('never'), cmd, []).action).toBe('refuse');
    expect(admit(gate, session('never'), cmd, [grant])).toMatchObject({ action: 'run' });
    expect(admit(gate, session('on-request'), cmd, [grant])).toMatchObject({ action: 'run' });
    const curl = bash('curl http://x');
    expect(admit(gate, session('on-request'), curl, [{ tool: 'bash', argv: ['curl', 'http://x'] } as Grant]).action).toBe('refuse');
  });

  it('a session policy only tightens: its forbid refuses what the global layer allows', () => {
    const policy = { version: 1, rules: [{ id: 'no-echo', tool: 'bash', command: ['echo'], decision: 'forbid', justification: 'quiet' }] };
    expect(admit(gate, session('never', policy), bash('echo hi'), [])).toMatchObject({ action: 'refuse', code: 'forbidden' });
  });
});
