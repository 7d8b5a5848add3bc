// The agent's own vocabulary for talking to a model: one message type for the
// whole loop, the tools it offers, and what a streamed call yields. Nothing
// here knows a provider; model-client.ts converts to and from the provider's
// format at the one boundary (pi-mono's convertToLlm).

export interface NativeToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model produced. */
  arguments: string;
}

export type AgentMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; text: string; kind: 'task' | 'feedback' }
  /** `visibleText` only: command blocks never enter the history (PROTOCOL.md §4). */
  | { role: 'assistant'; visibleText: string; toolCalls: NativeToolCall[]; interrupted: boolean }
  | { role: 'tool'; toolCallId: string; text: string };

/** A native tool as offered to the model: a function with the JSON schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: {
    type: 'object';
    properties: Record<string, { type: 'string' | 'integer'; description: string }>;
    required: string[];
    additionalProperties: false;
  };
}

/** What a streamed model call yields, flattened; tool calls arrive in fragments keyed by `index`. */
export type ModelEvent =
  | { type: 'reasoning'; text: string }
  | { type: 'text'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments?: string }
  | { type: 'usage'; prompt_tokens: number; completion_tokens: number; total_tokens: number };

/**
 * One streamed model call. Injected into the turn driver (default: the openai
 * SDK, model-client.ts), so the turn logic runs against a scripted stream in
 * tests. Throwing (or a rejected iteration) is a model error, unless `signal`
 * was aborted by the caller.
 */
export type StreamFn = (request: { messages: readonly AgentMessage[]; tools: readonly ToolSpec[] }, signal: AbortSignal) => AsyncIterable<ModelEvent>;
