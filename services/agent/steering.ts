// Steering and pause as the job loop sees them (API.md additions): messages a
// person sends to a running job, an interrupt that stops the current model
// stream, and a pause that holds the next model call. Where messages and flags
// are kept (Redis, another process) is the caller's business: the loop talks to
// the narrow `JobControl` port, so it runs in tests against an in-memory one.
import type { AgentMessage } from './messages.ts';

export interface SteeringMessage {
  id: string;
  text: string;
  interrupt: boolean;
  at: string;
}

export interface JobControl {
  /** Resolves once the job is not paused; rejects when `signal` aborts (cancel, timeout, shutdown). */
  untilRunnable(signal: AbortSignal): Promise<void>;
  /** The pending messages, oldest first, taken (they are no longer pending). */
  takeMessages(): Promise<SteeringMessage[]>;
  /** Whether messages are pending: a model that ended its turn then is not done yet. */
  hasMessages(): Promise<boolean>;
  /** `stop` is called when an interrupt arrives while it is registered; the returned function unregisters it. */
  onInterrupt(stop: () => void): () => void;
}

/** The block the model reads: the person's words, marked so they cannot pass for a command result. */
export function steeringBlock(messages: readonly SteeringMessage[]): string {
  const lines = messages.map((m) => m.text);
  return ['[THINKFLOW MESSAGE]', 'A person following this job says:', ...lines, '[/THINKFLOW MESSAGE]'].join('\n');
}

/**
 * Before a model call: waits out a pause, then lets pending messages join the
 * next user message (the last one of the history when it is a user message,
 * else a new one).
 */
export async function beforeModelCall(control: JobControl | undefined, history: AgentMessage[], signal: AbortSignal): Promise<void> {
  if (!control) return;
  await control.untilRunnable(signal);
  const messages = await control.takeMessages();
  if (messages.length === 0) return;
  const block = steeringBlock(messages);
  const last = history.at(-1);
  if (last?.role === 'user') history[history.length - 1] = { ...last, text: `${last.text}\n\n${block}` };
  else history.push({ role: 'user', kind: 'feedback', text: block });
}

/** A turn that ended the job is not the end while messages wait: the model hears them first. */
export async function pendingSteering(control: JobControl | undefined): Promise<boolean> {
  return control ? control.hasMessages() : false;
}
