// The built-in scripted model's door: the server, its transcripts and the demo ones.
export { REPLAY_MODEL_NAME, startReplayModel } from './server.ts';
export type { ReplayModel } from './server.ts';
export { Transcript } from './transcript.ts';
export type { TranscriptInput } from './transcript.ts';
export { BUILTIN_TRANSCRIPTS, DEMO_TASK, REVIEW_POLICY, REVIEW_TASK, SCENARIOS, reactSerialTranscript, thinkflowTranscript, TWENTY_WRITES } from './scenarios.ts';
