// Runs the real `thinkflow` bin against a fake API, as a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FakeEvent } from './fake-api.ts';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/thinkflow.mjs');

export type Run = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** `env` values of undefined remove the variable, so the caller's shell cannot leak in. */
export function run(args: string[], env: Record<string, string | undefined>, onStart?: (child: ChildProcess) => void): Promise<Run> {
  const merged: NodeJS.ProcessEnv = { ...process.env, THINKFLOW_URL: undefined, THINKFLOW_API_KEY: undefined, ...env };
  for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: merged });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    onStart?.(child);
  });
}

export const record = (over: Record<string, unknown>) => ({
  session: 'ses_1', turn: 1, path: null, dest: null, cmd: null, exit_code: null, duration_ms: null, error: null, ...over,
});

/** Two turns: a write, a bash command that asks for approval and is rejected, a parse error, then a clean ending. */
export function script(job: Record<string, unknown>): FakeEvent[] {
  const rules = [{ id: 'rm-anything', layer: 'global', decision: 'prompt', justification: 'deletes files' }];
  const approval = { token: 'tok-abc', session_id: 'ses_1', job_id: 'job_1', command_id: '2', turn: 1, tool: 'bash', target: 'rm -rf build', matched_rules: rules };
  return [
    { type: 'turn_started', data: { turn: 1, api_call: 1 } },
    { type: 'text_delta', data: { turn: 1, text: 'Creating the file ' } },
    { type: 'command_parsed', data: { turn: 1, stream: 'text', command: { id: '1', tool: 'write', path: 'src/a.ts', need_result: false } } },
    { type: 'command_queued', data: { index: 1, record: record({ id: '1', tool: 'write', path: 'src/a.ts', status: 'queued' }) } },
    { type: 'command_started', data: { index: 1, record: record({ id: '1', tool: 'write', path: 'src/a.ts', status: 'running' }) } },
    { type: 'command_finished', data: { index: 1, record: record({ id: '1', tool: 'write', path: 'src/a.ts', status: 'succeeded', duration_ms: 4 }) } },
    { type: 'command_parsed', data: { turn: 1, stream: 'text', command: { id: '2', tool: 'bash', cmd: 'rm -rf build', need_result: false } } },
    { type: 'approval_requested', data: { index: 2, approval: { ...approval, status: 'pending' } } },
    { type: 'approval_resolved', data: { index: 2, approval: { ...approval, status: 'reject', decided_by: 'key-ops', reason: 'not today' } } },
    { type: 'command_finished', data: { index: 2, record: record({ id: '2', tool: 'bash', cmd: 'rm -rf build', status: 'rejected', error: 'not today' }) } },
    { type: 'parse_error', data: { turn: 1, stream: 'text', error: { code: 'unclosed_tag', message: 'tf-write 3 never closed', id: '3' } } },
    { type: 'turn_ended', data: { turn: 1, api_call: 1, outcome: 'parse_error' } },
    { type: 'turn_started', data: { turn: 2, api_call: 2 } },
    { type: 'text_delta', data: { turn: 2, text: 'and now it is done.' } },
    { type: 'turn_ended', data: { turn: 2, api_call: 2, outcome: 'done' } },
    { type: 'job_finished', data: { job } },
  ];
}
