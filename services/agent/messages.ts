// One rich internal message type for the agent loop, converted to the
// provider's chat format only at the boundary (toLlmMessages).
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

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
