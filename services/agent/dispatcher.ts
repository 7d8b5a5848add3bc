import type { Command, ParseError, ParserOutput, StreamName } from '../protocol/index.ts';
import { FAILURE_STATUSES, parseErrorLabel, type LedgerStatus } from '../pipeline/index.ts';

// The turn's dispatcher (PROTOCOL.md §5), pure: what the parser produced and
// what the pipeline reported, in arrival order, become one decision each. The
// driver (turn-runner.ts) carries the decisions out; nothing here does I/O.

/** Why a turn's stream stops before its end. */
export type StopReason =
  /** §5.4: the command's result is fed back before the model goes on. */
  | { kind: 'need_result'; commandId: string }
  /** §5.3 for tags: the first parse error fails the turn; `commandsBefore` commands were enqueued before it. */
  | { kind: 'parse_error'; stream: StreamName; error: ParseError; commandsBefore: number }
  /** §5.3: a command of this turn failed, so later ones are skipped and the model re-plans. */
  | { kind: 'command_failed'; commandId: string }
  /** The job's max_commands would be exceeded by the next command. */
  | { kind: 'budget_exceeded'; budget: number }
  /** One turn issued more than THINKFLOW_MAX_COMMANDS_PER_TURN: nothing further is parsed. */
  | { kind: 'too_many_commands'; limit: number }
  /** The job was cancelled, timed out or the service shuts down. */
  | { kind: 'aborted'; reason: unknown }
  /** A steering message with `interrupt: true`: the model re-plans with it; the turn's queued commands still run. */
  | { kind: 'steered' };

export type DispatchInput =
  | { type: 'parsed'; output: ParserOutput }
  | { type: 'command_finished'; turn: number; commandId: string; status: LedgerStatus }
  | { type: 'aborted'; reason: unknown }
  | { type: 'steered' };

/** What the driver does with one input (the policy's allow/prompt/forbid is `Decision`, another concept). */
export type DispatchVerdict =
  /** Enqueue the command (in stream order); `stop` set: then stop the stream. */
  | { kind: 'enqueue'; stream: StreamName; command: Command; stop: Extract<StopReason, { kind: 'need_result' }> | null }
  /** Report the parse error, skip what is still queued in the turn, stop the stream. */
  | { kind: 'fail_turn'; label: string; reason: Extract<StopReason, { kind: 'parse_error' }> }
  | { kind: 'stop'; reason: StopReason }
  /** The turn already stopped, or the input is not about this turn's commands. */
  | { kind: 'ignore' };

export interface DispatchState {
  readonly turn: number;
  /** Commands this turn may issue (what is left of the job's max_commands). */
  readonly budget: number;
  /** Commands one turn may issue, whatever the budget (THINKFLOW_MAX_COMMANDS_PER_TURN). */
  readonly perTurn: number;
  readonly issued: number;
  readonly stopped: StopReason | null;
}

export function startDispatch(turn: number, budget: number, perTurn = Infinity): DispatchState {
  return { turn, budget, perTurn, issued: 0, stopped: null };
}

export function dispatch(state: DispatchState, input: DispatchInput): { state: DispatchState; decision: DispatchVerdict } {
  if (state.stopped) return { state, decision: { kind: 'ignore' } };
  const stop = (reason: StopReason) => ({ state: { ...state, stopped: reason }, decision: { kind: 'stop', reason } as const });
  switch (input.type) {
    case 'aborted':
      return stop({ kind: 'aborted', reason: input.reason });
    case 'steered':
      return stop({ kind: 'steered' });
    case 'command_finished':
      if (input.turn !== state.turn || !FAILURE_STATUSES.has(input.status)) return { state, decision: { kind: 'ignore' } };
      return stop({ kind: 'command_failed', commandId: input.commandId });
    case 'parsed':
      return parsed(state, input.output);
  }
}

function parsed(state: DispatchState, o: ParserOutput): { state: DispatchState; decision: DispatchVerdict } {
  if (o.type === 'error') {
    const reason = { kind: 'parse_error', stream: o.stream, error: o.error, commandsBefore: state.issued } as const;
    return { state: { ...state, stopped: reason }, decision: { kind: 'fail_turn', label: parseErrorLabel(o.error), reason } };
  }
  if (state.issued >= state.budget) {
    const reason = { kind: 'budget_exceeded', budget: state.budget } as const;
    return { state: { ...state, stopped: reason }, decision: { kind: 'stop', reason } };
  }
  if (state.issued >= state.perTurn) {
    const reason = { kind: 'too_many_commands', limit: state.perTurn } as const;
    return { state: { ...state, stopped: reason }, decision: { kind: 'stop', reason } };
  }
  const stop = o.command.need_result ? ({ kind: 'need_result', commandId: o.command.id } as const) : null;
  return { state: { ...state, issued: state.issued + 1, stopped: stop }, decision: { kind: 'enqueue', stream: o.stream, command: o.command, stop } };
}
