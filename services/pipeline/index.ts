// Public surface of the execution pipeline. Re-exports only.
export { Pipeline } from './pipeline.ts';
export type { CommandHandle, PipelineDeps } from './pipeline.ts';
export { createRedis } from './redis.ts';
export type { PipelineRedis } from './redis.ts';
export { runCommandsTurn, runParsedTurn, toResult, CommandResult } from './api-turn.ts';
export type { TurnOutcome } from './api-turn.ts';
export {
  LedgerRecord, LedgerStatus, LedgerApproval, ApprovalDecision, LEDGER_STATUSES, FINAL_STATUSES, FAILURE_STATUSES, isFinal, targetOf,
} from './ledger-record.ts';
export { Ledger } from './ledger.ts';
export { SessionEvent, StreamEvent, GapEvent, PublicApproval, CommandSummary, EVENT_TYPES, summaryOf } from './events.ts';
export type { SessionEventType, EventOf, EventBody, JobEvent, JobEventType, LedgerEvent, LedgerEventType } from './events.ts';
export { EventHub, readEvents, readEventPage, firstKeptSeq, gapEvent, parseEvent } from './event-reader.ts';
export type { EventPage } from './event-reader.ts';
export { EventWriter } from './event-writer.ts';
export type { JobEmit } from './event-writer.ts';
export { Approvals, ApprovalWaitAborted } from './approvals.ts';
export type { AnswerDecision, AnswerOutcome, ApprovalState } from './approvals.ts';
export { SandboxExecutor } from './executor.ts';
export type { Executor, ExecutionResult, ReadPathResult } from './executor.ts';
export { FilePolicyGate } from './policy-gate.ts';
export type { PolicyGate, ApprovalAction } from './policy-gate.ts';
export { Sessions, SessionMeta, ApprovalMode, newSessionId } from './sessions.ts';
export { WorkerPool } from './worker-pool.ts';
export type { WorkerPoolOptions } from './worker-pool.ts';
export { Processor } from './processor.ts';
export { PipelineError } from './errors.ts';
export type { PipelineErrorCode } from './errors.ts';
export { PipelineMetrics } from './metrics.ts';
export { createKeys } from './keys.ts';
export type { Keys } from './keys.ts';
export { Firehose } from './firehose.ts';
