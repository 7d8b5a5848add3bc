import { z } from 'zod';

// A scripted model: transcripts of turns the replay server streams back. One
// schema for the built-in demo scenarios, test fixtures and files given with
// THINKFLOW_REPLAY_SCRIPTS.

export const ScriptedToolCall = z.object({
  id: z.string().optional(),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
}).strict();
export type ScriptedToolCall = z.infer<typeof ScriptedToolCall>;

export const ScriptedTurn = z.object({
  /** Streamed as `delta.reasoning_content`. */
  reasoning: z.string().default(''),
  /** Streamed as `delta.content`. */
  text: z.string().default(''),
  tool_calls: z.array(ScriptedToolCall).default([]),
}).strict();
export type ScriptedTurn = z.infer<typeof ScriptedTurn>;

export const Transcript = z.object({
  name: z.string().min(1),
  /** Chosen when the task (first user message) contains this text, case-insensitive. */
  match: z.string().min(1),
  /** Chosen only for requests of this flow (`react` requests offer the `write` tool). */
  flow: z.enum(['thinkflow', 'react', 'any']).default('any'),
  /** Characters per streamed delta. @default 24 */
  chunk: z.number().int().positive().default(24),
  /** Send the usage chunk when the client asks for it (some providers never do). @default true */
  usage: z.boolean().default(true),
  /** Stream reasoning as `delta.reasoning` (OpenRouter style) instead of `delta.reasoning_content`. @default false */
  reasoning_field: z.enum(['reasoning_content', 'reasoning']).default('reasoning_content'),
  /** Pause between deltas, so interruptions land mid-stream. @default 2 */
  delay_ms: z.number().int().nonnegative().default(2),
  /**
   * The turn served is the number of assistant messages already in the
   * request; past the end the last turn is served again.
   */
  turns: z.array(ScriptedTurn).min(1),
}).strict();
export type Transcript = z.infer<typeof Transcript>;
export type TranscriptInput = z.input<typeof Transcript>;

export interface ChatRequestView {
  task: string;
  assistantTurns: number;
  flow: 'thinkflow' | 'react';
}

/** The first transcript whose `match` occurs in the task and whose flow fits. */
export function selectTranscript(transcripts: readonly Transcript[], request: ChatRequestView): Transcript | undefined {
  const task = request.task.toLowerCase();
  return transcripts.find((t) => (t.flow === 'any' || t.flow === request.flow) && task.includes(t.match.toLowerCase()));
}

export function turnFor(transcript: Transcript, assistantTurns: number): ScriptedTurn {
  return transcript.turns[Math.min(assistantTurns, transcript.turns.length - 1)]!;
}
