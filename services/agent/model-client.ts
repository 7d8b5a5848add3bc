// The model boundary: the only file that knows the provider's format. It
// converts the agent's messages and tools to OpenAI chat completions and
// flattens the streamed chunks into ModelEvents. Reasoning arrives as
// `delta.reasoning_content` (DeepSeek, vLLM) or `delta.reasoning` (OpenRouter
// and others); both are accepted.
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { AgentMessage, ModelEvent, StreamFn, ToolSpec } from './messages.ts';

export interface ModelEndpoint {
  model: string;
  source: 'replay' | 'openai-compatible';
  /** Streams one call to this endpoint. */
  stream: StreamFn;
}

/** @example const model = modelEndpoint('http://127.0.0.1:9000/v1', 'sk-…', 'gpt-4.1', 'openai-compatible') */
export function modelEndpoint(baseURL: string, apiKey: string | undefined, model: string, source: ModelEndpoint['source']): ModelEndpoint {
  // The SDK retries (429, 5xx, connection errors) only before a response
  // streams, so no delta of a retried call was ever parsed or executed.
  const client = new OpenAI({ baseURL, apiKey: apiKey || 'not-needed', maxRetries: 2, timeout: 10 * 60_000 });
  return { model, source, stream: (request, signal) => streamChat(client, model, request, signal) };
}

/** The agent's history in the provider's chat format (pi-mono's convertToLlm). */
export function toLlmMessages(messages: readonly AgentMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.text };
      case 'user':
        return { role: 'user', content: m.text };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.text };
      case 'assistant':
        if (m.toolCalls.length === 0) return { role: 'assistant', content: m.visibleText };
        return {
          role: 'assistant',
          content: m.visibleText || null,
          tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
        };
    }
  });
}

export function toLlmTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

type Delta = Record<string, unknown> & { tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }> };

async function* streamChat(client: OpenAI, model: string, request: Parameters<StreamFn>[0], signal: AbortSignal): AsyncGenerator<ModelEvent> {
  const stream = await client.chat.completions.create(
    {
      model,
      messages: toLlmMessages(request.messages),
      stream: true,
      stream_options: { include_usage: true },
      ...(request.tools.length > 0 ? { tools: toLlmTools(request.tools) } : {}),
    },
    { signal },
  );
  for await (const chunk of stream) {
    if (chunk.usage) {
      const u = chunk.usage;
      yield { type: 'usage', prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens };
    }
    const delta = chunk.choices?.[0]?.delta as Delta | undefined;
    if (!delta) continue;
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning.length > 0) yield { type: 'reasoning', text: reasoning };
    if (typeof delta.content === 'string' && delta.content.length > 0) yield { type: 'text', text: delta.content };
    for (const call of delta.tool_calls ?? []) {
      yield { type: 'tool_call', index: call.index, id: call.id, name: call.function?.name, arguments: call.function?.arguments };
    }
  }
}
