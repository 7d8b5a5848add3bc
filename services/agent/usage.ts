// Token usage when the provider sends none (some never do; an aborted stream
// never reaches the usage chunk): estimated with gpt-tokenizer (o200k_base)
// over everything the model received and produced, and marked `estimated`.
// The prompt is counted with the library's implementation of OpenAI's chat
// accounting (per-message overhead, function definitions as the model sees
// them), so tool schemas and earlier tool calls count as they are billed.
import { countTokens } from 'gpt-tokenizer';
import { computeChatCompletionTokenCount, type ChatCompletionFunctionDefinition, type ChatMessage } from 'gpt-tokenizer/functionCalling';
import type { AgentMessage, ToolSpec } from './messages.ts';

export type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };

/** What one model call produced: both streams and the native tool calls. */
export type Produced = { reasoning: string; text: string; toolCalls: ReadonlyArray<{ name: string; arguments: string }> };

const RUN = 256;

/**
 * Tokens of a text. Runs of more than 256 non-blank characters are counted in
 * slices: byte-pair merging of one huge "word" (a 1 MB base64 blob, a long
 * line of one letter) is quadratic and would stall the process for minutes.
 */
export function countTextTokens(text: string): number {
  if (text.length < RUN || !new RegExp(`\\S{${RUN}}`).test(text)) return countTokens(text);
  let n = 0;
  for (const part of text.split(new RegExp(`(\\S{${RUN}})`))) if (part) n += countTokens(part);
  return n;
}

/** The history as gpt-tokenizer counts it: each native tool call as a function_call entry. */
export function toCountedMessages(messages: readonly AgentMessage[]): ChatMessage[] {
  return messages.flatMap((m): ChatMessage[] => {
    const first: ChatMessage = { role: m.role, content: m.role === 'assistant' ? m.visibleText : m.text };
    if (m.role !== 'assistant') return [first];
    return [first, ...m.toolCalls.map((c): ChatMessage => ({ role: 'assistant', content: '', function_call: { name: c.name, arguments: c.arguments } }))];
  });
}

export function estimateUsage(messages: readonly AgentMessage[], tools: readonly ToolSpec[], produced: Produced): Usage {
  const functions = tools.map((t): ChatCompletionFunctionDefinition => ({ name: t.name, description: t.description, parameters: t.parameters }));
  const prompt = computeChatCompletionTokenCount({ messages: toCountedMessages(messages), ...(functions.length ? { functions } : {}) }, countTextTokens);
  let completion = countTextTokens(produced.reasoning) + countTextTokens(produced.text);
  for (const call of produced.toolCalls) completion += countTextTokens(call.name) + countTextTokens(call.arguments);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
