// What one model call of a job produced (turn-runner.ts): its texts, tool
// calls, usage, the records of its commands and why its stream ended.
import type { LedgerRecord } from '../pipeline/index.ts';
import type { StopReason } from './dispatcher.ts';
import type { NativeToolCall } from './messages.ts';
import type { Usage } from './usage.ts';

/** The model endpoint failed (connection, HTTP error, broken stream): the job fails with this reason. */
export class ModelError extends Error {
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'ModelError';
  }
}

export interface NativeResult {
  call: NativeToolCall;
  record: LedgerRecord | null;
  error: string | null;
}

/**
 * How the stream ended: by itself, stopped by the dispatcher, or broken off
 * by the model's side after it had sent something (a dropped connection, a
 * stalled stream): the commands parsed before the cut still run.
 */
export type TurnStop = StopReason | { kind: 'completed' } | { kind: 'stream_broken'; error: string };

export interface TurnReport {
  visibleText: string;
  outputText: string;
  /** The reasoning stream as received (tags included): the model produced it, so it is billed. */
  reasoningText: string;
  toolCalls: NativeToolCall[];
  /** The provider's figures, or an estimate (estimated: true) when it sent none. */
  usage: Usage & { estimated: boolean };
  /** Records of tag commands, final, in ledger order. */
  records: LedgerRecord[];
  nativeResults: NativeResult[];
  /** Why the stream ended, as it stood when the parsers were closed. */
  stop: TurnStop;
  commandsIssued: number;
}
