import { describe, expect, it } from 'vitest';
import { feedbackMessage, renderInterruption, renderLedger, type FeedbackRecord } from '../../../services/agent/feedback.ts';
import { targetOf } from '../../../services/protocol/index.ts';
import { decideTurnOutcome } from '../../../services/agent/turn-outcome.ts';

const rec = (over: Partial<FeedbackRecord>): FeedbackRecord => ({
  id: '1', tool: 'write', path: 'a.txt', dest: null, cmd: null, status: 'succeeded', bytes_written: 3, exit_code: null, error: null, stdout: null, stderr: null, ...over,
});

describe('feedback builder', () => {
  it('targets: path, path -> dest for copy, cmd for bash', () => {
    expect(targetOf(rec({}))).toBe('a.txt');
    expect(targetOf(rec({ tool: 'copy', dest: 'b.txt' }))).toBe('a.txt -> b.txt');
    expect(targetOf(rec({ tool: 'bash', path: null, cmd: 'ls -la' }))).toBe('ls -la');
  });

  it('renders one ledger line per record with id, tool, target, status, bytes, exit code and a short error', () => {
    const text = renderLedger([
      rec({}),
      rec({ id: '2', tool: 'bash', path: null, cmd: 'false', status: 'failed', bytes_written: null, exit_code: 1, error: `boom ${'x'.repeat(300)}` }),
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toBe('[THINKFLOW COMMAND LEDGER]');
    expect(lines[1]).toBe('- id=1 tool=write target="a.txt" status=succeeded bytes=3');
    expect(lines[2]).toMatch(/^- id=2 tool=bash target="false" status=failed exit=1 error="boom x+…"$/);
    expect(lines[2]!.length).toBeLessThan(260);
    expect(lines.at(-1)).toBe('[/THINKFLOW COMMAND LEDGER]');
  });

  it('an error names the failed command, its error and the skipped ids', () => {
    const text = renderInterruption({ kind: 'failure', record: rec({ id: '3', tool: 'edit', status: 'failed', error: 'edit_mismatch: <old> occurs 0 times' }), skipped: ['4', '5'] });
    expect(text).toContain('[THINKFLOW ERROR]');
    expect(text).toContain('Command 3 (edit a.txt) failed: edit_mismatch: <old> occurs 0 times.');
    expect(text).toContain('Skipped, not executed: 4, 5.');
    expect(text).toContain('new ids');
  });

  it('a parse error names the stream, code and id', () => {
    const text = renderInterruption({ kind: 'parse_error', stream: 'reasoning', error: { code: 'bad_attribute', message: 'attribute x', id: '7' }, skipped: [] });
    expect(text).toContain('Parse error in the reasoning stream (id 7): bad_attribute: attribute x.');
    expect(text).toContain('No later command of this turn was skipped.');
  });

  it('a result carries the output, capped', () => {
    const text = renderInterruption({ kind: 'result', record: rec({ id: '9', tool: 'read', stdout: 'y'.repeat(20_000), stdout_truncated: true }) });
    expect(text).toContain('[THINKFLOW RESULT]');
    expect(text).toContain('content (truncated by the sandbox):');
    expect(text).toContain('more characters not shown');
  });

  it('one user message: ledger block first, then the interruption; nothing when there is nothing to say', () => {
    expect(feedbackMessage([], null)).toBeNull();
    const msg = feedbackMessage([rec({})], { kind: 'result', record: rec({ id: '2', tool: 'read', stdout: 'hi' }) })!;
    expect(msg.indexOf('[THINKFLOW COMMAND LEDGER]')).toBe(0);
    expect(msg.indexOf('[THINKFLOW RESULT]')).toBeGreaterThan(0);
  });
});

describe('turn outcome', () => {
  const facts = { stop: { kind: 'completed' }, nativeCalls: 0 } as const;
  const needResult = { kind: 'need_result', commandId: '2' } as const;
  it.each([
    ['all succeeded → done', [rec({})], facts, 'done'],
    ['native calls → tools', [rec({})], { ...facts, nativeCalls: 2 }, 'tools'],
    ['need_result → result', [rec({}), rec({ id: '2', tool: 'read' })], { ...facts, stop: needResult }, 'result'],
    ['failure wins over need_result', [rec({ status: 'failed' }), rec({ id: '2', status: 'skipped' })], { ...facts, stop: needResult }, 'failure'],
    ['forbidden and rejected are failures', [rec({ status: 'forbidden' })], facts, 'failure'],
    ['rejected', [rec({ status: 'rejected' })], facts, 'failure'],
    ['interrupted', [rec({ status: 'interrupted' })], facts, 'failure'],
  ] as const)('%s', (_n, records, f, kind) => {
    const out = decideTurnOutcome({ records: [...records], ...f });
    expect(out.kind === 'interrupt' ? out.interruption.kind : out.kind).toBe(kind);
  });

  it('the earliest problem in stream order is reported: a failure before a parse error', () => {
    const records = [rec({ id: '1', status: 'failed' }), rec({ id: '2', status: 'skipped' })];
    const pe = { kind: 'parse_error', stream: 'text', error: { code: 'bad_id', message: 'x' }, commandsBefore: 2 } as const;
    const out = decideTurnOutcome({ records, stop: pe, nativeCalls: 0 });
    expect(out).toMatchObject({ kind: 'interrupt', interruption: { kind: 'failure', skipped: ['2'] } });
    const early = decideTurnOutcome({ records: [rec({ id: '1' }), rec({ id: '2', status: 'skipped' })], stop: { ...pe, commandsBefore: 1 }, nativeCalls: 0 });
    expect(early).toMatchObject({ kind: 'interrupt', interruption: { kind: 'parse_error', skipped: ['2'] } });
  });
});
