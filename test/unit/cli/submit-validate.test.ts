// `thinkflow submit --validate CMD`: the request carries the validator, --wait
// shows each validation round, and the final report says how it went.
import { afterEach, describe, expect, it } from 'vitest';
import { jobView, startFakeApi, type FakeApi, type FakeEvent } from './fake-api.ts';
import { run } from './helpers.ts';

let api: FakeApi | undefined;
afterEach(async () => { await api?.close(); api = undefined; });

const job = jobView({ validate: { cmd: 'npm test', max_rounds: 3 }, validation: { rounds: 2, passed: true } });
const events: FakeEvent[] = [
  { type: 'turn_started', data: { turn: 1, api_call: 1 } },
  { type: 'turn_ended', data: { turn: 1, api_call: 1, outcome: 'done' } },
  { type: 'validation_started', data: { round: 1, max_rounds: 3, command_id: 'validate-1', cmd: 'npm test' } },
  { type: 'validation_finished', data: { round: 1, max_rounds: 3, command_id: 'validate-1', passed: false, status: 'failed', exit_code: 1, error: 'exit code 1' } },
  { type: 'turn_started', data: { turn: 3, api_call: 2 } },
  { type: 'turn_ended', data: { turn: 3, api_call: 2, outcome: 'done' } },
  { type: 'validation_started', data: { round: 2, max_rounds: 3, command_id: 'validate-2', cmd: 'npm test' } },
  { type: 'validation_finished', data: { round: 2, max_rounds: 3, command_id: 'validate-2', passed: true, status: 'succeeded', exit_code: 0, error: null } },
  { type: 'job_finished', data: { job } },
];

describe('thinkflow submit --validate', () => {
  it('posts validate.cmd and shows the validation rounds and their outcome', async () => {
    api = await startFakeApi({ events, job });
    const r = await run(['submit', 'make the tests pass', '--validate', 'npm test', '--wait'], { THINKFLOW_URL: api.url });
    expect(r.code, r.stderr).toBe(0);
    const post = api.requests.find((q) => q.method === 'POST' && q.path === '/v1/jobs');
    expect(JSON.parse(post!.body)).toEqual({ task: 'make the tests pass', validate: { cmd: 'npm test' } });
    expect(r.stderr).toContain('── validation 1/3: npm test\n  validation 1/3 failed (failed, exit 1)\n');
    expect(r.stderr).toContain('── validation 2/3: npm test\n  validation 2/3 passed\n');
    expect(r.stdout).toContain('validation passed after 2 rounds  (npm test)\n');
  });

  it('an empty command is a usage error', async () => {
    api = await startFakeApi();
    const r = await run(['submit', 't', '--validate', ' '], { THINKFLOW_URL: api.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--validate takes a command, got an empty one');
    expect(api.requests).toEqual([]);
  });
});
