import { createLogger, log, setLogger } from '../../../services/log/index.ts';
import type { EventBody, LedgerRecord, PublicApproval, SessionEventType } from '../../../services/pipeline/index.ts';

// One body of every event of the union, as its writer supplies it (the log
// adds seq, index, session_id, job_id, at), and a log capture: shared by the
// schema unit tests and the Redis round trip.

export const RECORD: LedgerRecord = {
  session: 'ses_1', turn: 1, id: '1', tool: 'write', path: 'a.txt', dest: null, cmd: null,
  content: 'hi', content_size: 2, content_sha256: 'x'.repeat(64), old_text: null, new_text: null,
  content_truncated: false, old_text_size: null, old_text_sha256: null, old_text_truncated: false, new_text_size: null, new_text_sha256: null, new_text_truncated: false,
  need_result: false, timeout: null, flow: 'text', risk: 'medium', decision: 'allow',
  matched_rule: null, matched_rules: [], justification: null, policy_reason: null, enqueued_at: '2026-01-01T00:00:00.000Z',
  error: null, error_code: null, bytes_written: 2, stdout: null, stderr: null, stdout_truncated: false, stderr_truncated: false,
  exit_code: null, duration_ms: 3, output_summary: 'wrote 2 bytes',
  index: 1, status: 'succeeded', approval: null, injected: false,
  started_at: '2026-01-01T00:00:00.001Z', finished_at: '2026-01-01T00:00:00.004Z', executed_by: 'host:1',
  timings: { admitted_at: '2026-01-01T00:00:00.000Z', queued_at: '2026-01-01T00:00:00.000Z', started_at: '2026-01-01T00:00:00.001Z', finished_at: '2026-01-01T00:00:00.004Z' },
};

export const APPROVAL: PublicApproval = {
  token: 'tok', session_id: 'ses_1', job_id: 'job_1', command_id: '2', turn: 1, tool: 'bash', target: 'rm -rf build',
  matched_rules: [{ id: 'rm', layer: 'global', decision: 'prompt', justification: 'deletes files' }],
  justification: 'deletes files', created_at: '2026-01-01T00:00:00.000Z', expires_at: '2026-01-01T00:15:00.000Z',
  status: 'pending', decision: null, decided_by: null, reason: null, decided_at: null,
  grant_options: [{ scope: 'exact', covers: 'rm -rf build' }, { scope: 'prefix', covers: null, unavailable: 'no prefix for rm' }],
};

const SUMMARY = { turn: 1, id: '1', tool: 'write', status: 'queued', flow: 'text', target: 'a.txt' };

export const SAMPLES: { [T in SessionEventType]: EventBody & { type: T } } = {
  command_queued: { type: 'command_queued', command: SUMMARY },
  approval_requested: { type: 'approval_requested', approval: APPROVAL },
  approval_resolved: { type: 'approval_resolved', approval: { ...APPROVAL, status: 'reject', decision: 'reject', decided_by: 'ops', reason: 'no' } },
  command_started: { type: 'command_started', command: { ...SUMMARY, status: 'running' } },
  command_finished: { type: 'command_finished', record: RECORD },
  turn_started: { type: 'turn_started', turn: 1, api_call: 1 },
  reasoning_delta: { type: 'reasoning_delta', turn: 1, text: 'thinking' },
  text_delta: { type: 'text_delta', turn: 1, text: 'visible' },
  command_parsed: { type: 'command_parsed', turn: 1, stream: 'native', command: { id: 'call_1_0', tool: 'read', path: 'a.txt', need_result: true } },
  parse_error: { type: 'parse_error', turn: 1, stream: 'text', error: { code: 'unclosed_tag', message: 'tf-write 3 never closed', id: '3' } },
  turn_ended: { type: 'turn_ended', turn: 1, api_call: 1, outcome: 'done' },
  validation_started: { type: 'validation_started', round: 1, max_rounds: 3, command_id: 'validate-1', cmd: 'npm test' },
  validation_finished: {
    type: 'validation_finished', round: 1, max_rounds: 3, command_id: 'validate-1', passed: false, status: 'failed', exit_code: 1, error: 'exit code 1',
  },
  job_finished: { type: 'job_finished', job: { job_id: 'job_1', session_id: 'ses_1', status: 'succeeded', turns: 1 } },
  files_seeded: { type: 'files_seeded', paths: [{ path: 'a.txt', bytes: 2 }] },
  message_added: { type: 'message_added', text: 'use tabs, not spaces', interrupt: true },
  job_paused: { type: 'job_paused' },
  job_resumed: { type: 'job_resumed' },
  network_connection: {
    type: 'network_connection',
    record: {
      session: 'ses_1', id: 'net-1', tool: 'network', target: 'registry.example:443', host: 'registry.example', port: 443, job_id: 'job_1',
      command_id: '3', command_index: 3, decision: 'allow', matched_rules: [{ id: 'registry', layer: 'project', decision: 'allow', justification: 'the mirror' }],
      matched_rule: 'registry', policy_reason: 'allow by rule registry (project) for `registry.example:443`: the mirror', status: 'succeeded',
      approval: null, address: '203.0.113.7', bytes_in: 5120, bytes_out: 310, duration_ms: 42, error: null,
      enqueued_at: '2026-01-01T00:00:00.000Z', finished_at: '2026-01-01T00:00:00.042Z',
      timings: { admitted_at: '2026-01-01T00:00:00.000Z', queued_at: '2026-01-01T00:00:00.000Z', started_at: '2026-01-01T00:00:00.001Z', finished_at: '2026-01-01T00:00:00.042Z' },
    },
  },
};

/** What a script stores for a body: seq and index first, then the body's JSON. */
export function stored(json: string, seq: number, index: number): string {
  return `{"seq":${seq},"index":${index},${json.slice(1)}`;
}

/** The log lines (parsed) written while `fn` runs. */
export async function captureLog(fn: () => unknown): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const previous = log();
  const destination = { write: (s: string) => { lines.push(s); return true; } } as unknown as NodeJS.WritableStream;
  setLogger(createLogger({ level: 'debug', pretty: false, destination }));
  try { await fn(); } finally { setLogger(previous); }
  return lines.flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}
