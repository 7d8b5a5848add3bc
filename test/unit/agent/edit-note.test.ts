import { describe, expect, it } from 'vitest';
import { feedbackMessage, renderInterruption, renderLedger, type FeedbackRecord } from '../../../services/agent/feedback.ts';

// approve_edited: the model hears that the operator changed its command, what it asked for and what ran.
const rec = (over: Partial<FeedbackRecord>): FeedbackRecord => ({
  id: '1', tool: 'bash', path: null, dest: null, cmd: 'echo safe', status: 'succeeded', bytes_written: null, exit_code: 0, error: null, stdout: 'safe\n', stderr: null, ...over,
});
const bashFrom = { cmd: 'rm -rf build', content: null, content_size: null };

describe('feedback of an edited command', () => {
  it('a result says the operator edited the command, what was asked and what ran', () => {
    const text = renderInterruption({ kind: 'result', record: rec({ edited_from: bashFrom }) });
    expect(text).toContain('Command 1 (bash echo safe) succeeded with exit code 0.\nThe operator edited this command before approving it; the edited command is what ran.');
    expect(text).toContain('You asked for: rm -rf build\nWhat ran: echo safe');
    expect(text).toContain('stdout:\nsafe');
  });

  it('a failure of an edited command says so too', () => {
    const text = renderInterruption({ kind: 'failure', record: rec({ status: 'failed', exit_code: 2, error: 'exit code 2', edited_from: bashFrom }), skipped: ['2'] });
    expect(text).toContain('[THINKFLOW ERROR]');
    expect(text).toContain('What ran: echo safe');
  });

  it('the ledger line marks the edit with what was asked', () => {
    const text = renderLedger([rec({ edited_from: bashFrom }), rec({ id: '2' })]);
    expect(text.split('\n')[1]).toBe('- id=1 tool=bash target="echo safe" status=succeeded edited=operator asked="rm -rf build" exit=0');
    expect(text.split('\n')[2]).toBe('- id=2 tool=bash target="echo safe" status=succeeded exit=0');
    expect(feedbackMessage([rec({ edited_from: bashFrom })], null)).toContain('edited=operator');
  });

  it('an edited write shows the written content (its first part when long), and sizes', () => {
    const w = (content: string, size: number) => rec({
      tool: 'write', path: 'notes.md', cmd: null, stdout: null, exit_code: null, bytes_written: size, content, content_size: size,
      edited_from: { cmd: null, content: 'asked\n', content_size: 6 },
    });
    const short = renderInterruption({ kind: 'result', record: w('operator text\n', 14) });
    expect(short).toContain('The operator edited the content before approving it; the edited content is what was written to notes.md.');
    expect(short).toContain('You asked to write 6 bytes; what was written (14 bytes):\noperator text');
    const long = renderInterruption({ kind: 'result', record: w('y'.repeat(10_000), 10_000) });
    expect(long).toContain('what was written (10000 bytes), first part:');
    expect(long.length).toBeLessThan(5000);
    expect(renderLedger([w('x', 1)])).toContain('edited=operator asked="6 bytes of content"');
  });

  it('an unedited record says nothing of edits', () => {
    expect(renderInterruption({ kind: 'result', record: rec({}) })).not.toContain('operator');
  });
});
