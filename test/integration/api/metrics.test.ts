import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { suiteService } from '../suite-service.ts';

// /metrics is what a Prometheus server scrapes: it must pass Prometheus's own
// linter (`promtool check metrics`, Debian's prometheus package), carry the
// process metrics and the service's series with the work just done.

const svc = suiteService('metrics');

function promtool(text: string) {
  return spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
}

describe('/metrics', () => {
  it('passes `promtool check metrics` after real work, with process metrics and the command series', async () => {
    const session = await (await fetch(`${svc.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json() as { session_id: string };
    const run = await fetch(`${svc.url}/v1/sessions/${session.session_id}/commands`, {
      method: 'POST', headers: { 'content-type': 'text/plain' },
      body: '<tf-write id="1" path="a.txt">hi\n</tf-write>\n<tf-copy id="2" path="missing.txt" dest="b.txt" />\n',
    });
    expect(run.status).toBe(200);
    const res = await fetch(`${svc.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^thinkflow_commands_finished_total\{status="succeeded",tool="write"\} 1$/m);
    expect(text).toMatch(/^thinkflow_commands_finished_total\{status="failed",tool="copy"\} 1$/m);
    expect(text).toMatch(/^thinkflow_command_execution_seconds_count\{tool="copy"\} 1$/m);
    expect(text).toMatch(/^thinkflow_approvals_pending 0$/m);
    expect(text).toMatch(/^thinkflow_http_requests_total\{method="POST",route="\/v1\/sessions",status="201"\} 1$/m);
    const check = promtool(text);
    expect(check.error).toBeUndefined();
    expect({ status: check.status, out: check.stdout + check.stderr }).toEqual({ status: 0, out: '' });
  });

  it('the check can fail: promtool refuses a series it would not accept (the test is not vacuous)', () => {
    const bad = promtool('# HELP thinkflow_x x\n# TYPE thinkflow_x gauge\nthinkflow_x_total 1\n# TYPE y counter\ny 1\n');
    expect(bad.status).not.toBe(0);
  });
});
