import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/index.ts';
import { sandboxCallKeys } from '../../../services/pipeline/keys.ts';
import { fromWire, SandboxCallError, toWire } from '../../../services/pipeline/sandbox-calls/errors.ts';
import { decodeFrame, encodeFrame, slices } from '../../../services/pipeline/sandbox-calls/frames.ts';
import { keyTtlMs, resolveCallOptions } from '../../../services/pipeline/sandbox-calls/options.ts';
import { toAppError } from '../../../services/api/index.ts';
import { UploadError } from '../../../services/sandbox/index.ts';

describe('sandbox call bounds', () => {
  it('have defaults: 5 s pickup, 120 s answer, 30 s stall, 32 MiB answers, 256 KiB frames × 8 in Redis, 16 calls a worker', () => {
    expect(resolveCallOptions()).toEqual({
      pickupMs: 5_000, answerMs: 120_000, stallMs: 30_000, maxAnswerBytes: 32 * 1024 * 1024, frameBytes: 256 * 1024, window: 8, pollMs: 250, callsPerWorker: 16,
    });
    expect(loadConfig({}).sandboxCalls).toEqual({ pickupMs: 5_000, answerMs: 120_000, stallMs: 30_000, maxAnswerBytes: 32 * 1024 * 1024, callsPerWorker: 16 });
    // A call's keys outlive its longest possible wait, and no more.
    expect(keyTtlMs(resolveCallOptions())).toBe(5_000 + 120_000 + 60_000);
  });

  it('are set by THINKFLOW_SANDBOX_CALL_*; zero or a fraction is refused, naming the setting', () => {
    expect(loadConfig({
      THINKFLOW_SANDBOX_CALL_PICKUP_MS: '800', THINKFLOW_SANDBOX_CALL_ANSWER_MS: '9000', THINKFLOW_SANDBOX_CALL_STALL_MS: '700',
      THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB: '4', THINKFLOW_SANDBOX_CALLS_PER_WORKER: '2',
    }).sandboxCalls).toEqual({ pickupMs: 800, answerMs: 9000, stallMs: 700, maxAnswerBytes: 4 * 1024 * 1024, callsPerWorker: 2 });
    expect(() => loadConfig({ THINKFLOW_SANDBOX_CALL_PICKUP_MS: '0' })).toThrow(/THINKFLOW_SANDBOX_CALL_PICKUP_MS/);
    expect(() => loadConfig({ THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB: '1.5' })).toThrow(/THINKFLOW_SANDBOX_CALL_MAX_ANSWER_MB/);
  });
});

describe('sandbox call keys and frames', () => {
  it("keeps a call's pipes in its session's slot; the calls list and mailboxes are the prefix's", () => {
    const k = sandboxCallKeys('tfx');
    expect(k.pipe('S1', 'c0ffee', 'down')).toBe('tfx:{S1}:sbx:c0ffee:down');
    expect(k.pipe('S1', 'c0ffee', 'end')).toBe('tfx:{S1}:sbx:c0ffee:end');
    expect(k.calls()).toBe('tfx:sbx:calls');
    expect(k.mailbox('ab12')).toBe('tfx:sbx:mb:ab12');
    expect(() => k.pipe('S1', 'x:y', 'up')).toThrow(/call id/);
  });

  it('round-trips every frame, binary data untouched', () => {
    const data = Buffer.from([0, 255, 10, 13, 0x44]);
    for (const f of [
      { t: 'A', mailbox: 'm1' }, { t: 'H', head: { mailbox: 'm', value: { kind: 'dir', entries: [] } } }, { t: 'D', data },
      { t: 'E' }, { t: 'X', error: { name: 'UploadError', message: 'no', code: 'invalid_archive', details: { entry: 'a' } } },
    ] as const) {
      expect(decodeFrame(encodeFrame(f))).toEqual(f);
    }
    expect(() => decodeFrame(Buffer.from('Zx'))).toThrow(/unknown frame type/);
    expect([...slices(Buffer.alloc(10), 4)].map((b) => b.length)).toEqual([4, 4, 2]);
  });
});

describe('sandbox call errors', () => {
  it("cross as the worker threw them: the upload's refusals as UploadError, the rest by name, code and exit code", () => {
    const up = fromWire(toWire(new UploadError('workspace_full', 'full', { limit: 3 })));
    expect(up).toBeInstanceOf(UploadError);
    expect(up).toMatchObject({ code: 'workspace_full', message: 'full', details: { limit: 3 } });
    const exec = fromWire(toWire(Object.assign(new Error('tar failed'), { name: 'WorkspaceExecError', code: 'workspace_changed', exitCode: 2 })));
    expect(exec).toMatchObject({ name: 'WorkspaceExecError', code: 'workspace_changed', exitCode: 2, message: 'tar failed' });
    expect(fromWire(toWire('plain'))).toMatchObject({ name: 'Error', message: 'plain' });
  });

  it('map to 503 sandbox_unavailable, 504 sandbox_timeout and 502 sandbox_answer_too_large', () => {
    const http = (e: SandboxCallError) => { const a = toAppError(e)!; return [a.status, a.code, a.message]; };
    expect(http(new SandboxCallError('sandbox_unavailable', 'no worker took it'))).toEqual([503, 'sandbox_unavailable', 'no worker took it']);
    expect(http(new SandboxCallError('sandbox_timeout', 'late'))).toEqual([504, 'sandbox_timeout', 'late']);
    expect(http(new SandboxCallError('sandbox_answer_too_large', 'big'))).toEqual([502, 'sandbox_answer_too_large', 'big']);
  });
});
