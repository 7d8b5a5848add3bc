// The model boundary: an OpenAI-compatible streaming chat call, flattened into
// a few event kinds. Reasoning arrives as `delta.reasoning_content` (DeepSeek,
// vLLM) or `delta.reasoning` (OpenRouter and others); both are accepted.
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

export type ModelEvent =
  | { type: 'reasoning'; text: string }
  | { type: 'text'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments?: string }
  | { type: 'usage'; prompt_tokens: number; completion_tokens: number; total_tokens: number };

export interface ModelEndpoint {
  client: OpenAI;
  model: string;
  source: 'replay' | 'openai-compatible';
}

/** @example const model = modelEndpoint('http://127.0.0.1:9000/v1', 'sk-…', 'gpt-4.1') */
export function modelEndpoint(baseURL: string, apiKey: string | undefined, model: string, source: ModelEndpoint['source']): ModelEndpoint {
  // The SDK retries (429, 5xx, connection errors) only before a response
  // streams, so no delta of a retried call was ever parsed or executed.
  return { client: new OpenAI({ baseURL, apiKey: apiKey || 'not-needed', maxRetries: 2, timeout: 10 * 60_000 }), model, source };
}

export async function* streamChat(
  endpoint: ModelEndpoint,
  messages: ChatCompletionMessageParam[],
  tools: ChatCompletionTool[],
  signal: AbortSignal,
): AsyncGenerator<ModelEvent> {
  const stream = await endpoint.client.chat.completions.create(
    {
      model: endpoint.model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      ...(tools.length > 0 ? { tools } : {}),
    },
    { signal },
  );
  for await (const chunk of stream) {
    if (chunk.usage) {
      const u = chunk.usage;
      yield { type: 'usage', prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };
    }
    const delta = chunk.choices?.[0]?.delta as (Record<string, unknown> & { tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> }) | undefined;
    if (!delta) continue;
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning.length > 0) yield { type: 'reasoning', text: reasoning };
    if (typeof delta.content === 'string' && delta.content.length > 0) yield { type: 'text', text: delta.content };
    for (const call of delta.tool_calls ?? []) {
      yield { type: 'tool_call', index: call.index, id: call.id, name: call.function?.name, arguments: call.function?.arguments };
    }
  }
}
