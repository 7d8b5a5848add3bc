// The dispatcher alone: each (state, input) → one typed decision, pure.
import { describe, expect, it } from 'vitest';
import { dispatch, startDispatch, type DispatchInput, type DispatchState } from '../../../services/agent/dispatcher.ts';
import type { Command } from '../../../services/protocol/index.ts';

const cmd = (id: string, over: Partial<Command> = {}): Command => ({ id, tool: 'write', path: `${id}.txt`, content: 'x', need_result: false, ...over });
const parsed = (command: Command): DispatchInput => ({ type: 'parsed', output: { type: 'command', stream: 'reasoning', command } });
const badId: DispatchInput = { type: 'parsed', output: { type: 'error', stream: 'text', error: { code: 'bad_id', message: 'id must be digits' } } };

function run(state: DispatchState, inputs: DispatchInput[]) {
  const decisions = [];
  for (const input of inputs) {
    const r = dispatch(state, input);
    state = r.state;
    decisions.push(r.decision);
  }
  return { state, decisions };
}

describe('dispatcher', () => {
  it('enqueues commands in order and counts them', () => {
    const { state, decisions } = run(startDispatch(3, 10), [parsed(cmd('1')), parsed(cmd('2'))]);
    expect(decisions).toEqual([
      { kind: 'enqueue', stream: 'reasoning', command: cmd('1'), stop: null },
      { kind: 'enqueue', stream: 'reasoning', command: cmd('2'), stop: null },
    ]);
    expect(state).toEqual({ turn: 3, budget: 10, perTurn: Infinity, issued: 2, stopped: null });
  });

  it('need_result: enqueue, then stop; later outputs are ignored', () => {
    const { state, decisions } = run(startDispatch(1, 10), [parsed(cmd('1', { tool: 'read', content: undefined, need_result: true })), parsed(cmd('2'))]);
    expect(decisions.map((d) => d.kind)).toEqual(['enqueue', 'ignore']);
    expect(decisions[0]).toMatchObject({ stop: { kind: 'need_result', commandId: '1' } });
    expect(state.stopped).toEqual({ kind: 'need_result', commandId: '1' });
    expect(state.issued).toBe(1);
  });

  it('a parse error fails the turn, naming the code and the tag id when there is one', () => {
    const { decisions } = run(startDispatch(1, 10), [parsed(cmd('1')), badId, parsed(cmd('3'))]);
    expect(decisions[1]).toEqual({
      kind: 'fail_turn', label: 'parse error (bad_id)',
      reason: { kind: 'parse_error', stream: 'text', error: { code: 'bad_id', message: 'id must be digits' }, commandsBefore: 1 },
    });
    expect(decisions[2]).toEqual({ kind: 'ignore' });
    const withId: DispatchInput = { type: 'parsed', output: { type: 'error', stream: 'reasoning', error: { code: 'duplicate_id', message: 'm', id: '7' } } };
    expect(dispatch(startDispatch(1, 10), withId).decision).toMatchObject({ label: 'parse error (duplicate_id in tag 7)' });
  });

  it('a failure of this turn stops; successes and other turns do not', () => {
    const s = startDispatch(2, 10);
    expect(dispatch(s, { type: 'command_finished', turn: 2, commandId: '1', status: 'succeeded' }).decision).toEqual({ kind: 'ignore' });
    expect(dispatch(s, { type: 'command_finished', turn: 1, commandId: '1', status: 'failed' }).decision).toEqual({ kind: 'ignore' });
    expect(dispatch(s, { type: 'command_finished', turn: 2, commandId: '1', status: 'skipped' }).decision).toEqual({ kind: 'ignore' });
    for (const status of ['failed', 'forbidden', 'rejected', 'interrupted'] as const) {
      expect(dispatch(s, { type: 'command_finished', turn: 2, commandId: '5', status }).decision).toEqual({ kind: 'stop', reason: { kind: 'command_failed', commandId: '5' } });
    }
  });

  it('the command past the budget is not enqueued', () => {
    const { decisions, state } = run(startDispatch(1, 1), [parsed(cmd('1')), parsed(cmd('2')), parsed(cmd('3'))]);
    expect(decisions.map((d) => d.kind)).toEqual(['enqueue', 'stop', 'ignore']);
    expect(state.stopped).toEqual({ kind: 'budget_exceeded', budget: 1 });
  });

  it('the command past the per-turn cap is not enqueued, whatever the budget (THINKFLOW_MAX_COMMANDS_PER_TURN)', () => {
    const { decisions, state } = run(startDispatch(1, 100, 2), [parsed(cmd('1')), parsed(cmd('2')), parsed(cmd('3')), parsed(cmd('4'))]);
    expect(decisions.map((d) => d.kind)).toEqual(['enqueue', 'enqueue', 'stop', 'ignore']);
    expect(state.stopped).toEqual({ kind: 'too_many_commands', limit: 2 });
    expect(state.issued).toBe(2);
  });

  it('an abort stops; the first stop reason is kept', () => {
    const { decisions, state } = run(startDispatch(1, 5), [
      { type: 'aborted', reason: 'cancelled' }, { type: 'command_finished', turn: 1, commandId: '1', status: 'failed' }, badId,
    ]);
    expect(decisions).toEqual([{ kind: 'stop', reason: { kind: 'aborted', reason: 'cancelled' } }, { kind: 'ignore' }, { kind: 'ignore' }]);
    expect(state.stopped).toEqual({ kind: 'aborted', reason: 'cancelled' });
  });

  it('never mutates the state it is given', () => {
    const s = Object.freeze(startDispatch(1, 5));
    expect(() => run(s, [parsed(cmd('1')), badId])).not.toThrow();
    expect(s).toEqual({ turn: 1, budget: 5, perTurn: Infinity, issued: 0, stopped: null });
  });
});
