// Flows as a small registry (API.md): `thinkflow` streams tf-* tags and keeps
// native tools for information only; `react` uses native tool calls only, the
// baseline the benchmark compares against.
import { z } from 'zod';
import { REACT_SYSTEM_PROMPT, THINKFLOW_SYSTEM_PROMPT } from './system-prompt.ts';

export const FlowName = z.enum(['thinkflow', 'react']);
export type FlowName = z.infer<typeof FlowName>;

export interface Flow {
  name: FlowName;
  systemPrompt: string;
  /** Native tools offered to the model. */
  nativeTools: readonly string[];
  /** Whether tf-* tags in the stream are executed. */
  parsesTags: boolean;
}

export const FLOWS: Record<FlowName, Flow> = {
  thinkflow: {
    name: 'thinkflow',
    systemPrompt: THINKFLOW_SYSTEM_PROMPT,
    nativeTools: ['read', 'bash', 'list_files', 'grep'],
    parsesTags: true,
  },
  react: {
    name: 'react',
    systemPrompt: REACT_SYSTEM_PROMPT,
    nativeTools: ['write', 'append', 'mkdir', 'touch', 'copy', 'edit', 'read', 'bash', 'list_files', 'grep'],
    parsesTags: false,
  },
};
