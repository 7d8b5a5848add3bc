// The agent's door. One export statement per line.
export { runJob, ledgerSummary, JobStopped } from './job-runner.ts';
export { steeringBlock } from './steering.ts';
export type { JobControl, SteeringMessage } from './steering.ts';
export type { JobRunnerDeps, JobPipeline } from './job-runner.ts';
export { runTurn, ModelError } from './turn-runner.ts';
export type { TurnDeps, TurnInput, TurnReport, TurnPipeline, TurnStop } from './turn-runner.ts';
export { dispatch, startDispatch } from './dispatcher.ts';
export type { Decision, DispatchInput, DispatchState, StopReason } from './dispatcher.ts';
export type { AgentEvent, EmitFn } from './events.ts';
export type { AgentMessage, ModelEvent, NativeToolCall, StreamFn, ToolSpec } from './messages.ts';
export { modelEndpoint } from './model-client.ts';
export type { ModelEndpoint } from './model-client.ts';
export { FLOWS, FlowName } from './flows.ts';
export type { Flow } from './flows.ts';
export { commandFromToolCall, nativeTools } from './native-tools.ts';
export { JobStatus, JobLimits, JobUsage, CommandCounts, emptyCounts } from './job-state.ts';
export type { JobState, JobTask } from './job-state.ts';
