// The agent's door. One export statement per line.
export { runJob, ledgerSummary } from './job-runner.ts';
export type { JobControl, SteeringMessage } from './steering.ts';
export type { JobPipeline } from './job-runner.ts';
export { runTurn, ModelError } from './turn-runner.ts';
export type { TurnInput } from './turn-runner.ts';
export { dispatch, startDispatch } from './dispatcher.ts';
export type { DispatchInput, DispatchState } from './dispatcher.ts';
export type { AgentMessage, ModelEvent, StreamFn, ToolSpec } from './messages.ts';
export { modelEndpoint } from './model-client.ts';
export { withIdleTimeout, ModelStalledError } from './model-idle.ts';
export type { ModelEndpoint } from './model-client.ts';
export { FLOWS, FlowName } from './flows.ts';
export type { Flow } from './flows.ts';
export { commandFromToolCall, nativeTools } from './native-tools.ts';
export { validatorCommand } from './validator.ts';
export { JobStatus, JobLimits, JobUsage, CommandCounts, emptyCounts, JobValidate, ValidationProgress } from './job-state.ts';
export type { JobState } from './job-state.ts';
