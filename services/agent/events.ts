import type { Command, CommandFlow, ParseError, StreamName } from '../protocol/index.ts';

// The events the job loop produces (API.md, events), as one union. The loop
// emits them through one injected sink; jobs/ decides where they go (the
// session's event stream, next to the pipeline's command events).

/** How a turn ended: the end of the job, native results to send, or the interruption fed back. */
export type TurnEndOutcome = 'done' | 'tools' | 'failure' | 'parse_error' | 'result';

export type AgentEvent =
  | { type: 'turn_started'; turn: number; api_call: number }
  | { type: 'reasoning_delta'; turn: number; text: string }
  | { type: 'text_delta'; turn: number; text: string }
  | { type: 'command_parsed'; turn: number; stream: Exclude<CommandFlow, 'api'>; command: Command }
  | { type: 'parse_error'; turn: number; stream: StreamName; error: ParseError }
  | { type: 'turn_ended'; turn: number; api_call: number; outcome: TurnEndOutcome };

/** Where the loop's events go. A rejection (the store is down) fails the job as an infrastructure error. */
export type EmitFn = (event: AgentEvent) => Promise<void>;
