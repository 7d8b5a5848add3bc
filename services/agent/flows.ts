// Flows as a small registry (API.md): `thinkflow` streams tf-* tags and keeps
// native tools for information only; `react` uses native tool calls only, the
// baseline the benchmark compares against.
import { z } from 'zod';
import { TOOL_NAMES, TOOLS } from '../protocol/index.ts';
import { REACT_SYSTEM_PROMPT, THINKFLOW_SYSTEM_PROMPT } from './system-prompt.ts';

/** Native-only helpers (native-tools.ts): they run as read-only bash. */
const HELPERS = ['list_files', 'grep'] as const;

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
    nativeTools: [...TOOL_NAMES.filter((t) => TOOLS[t].lookAround), ...HELPERS],
    parsesTags: true,
  },
  react: {
    name: 'react',
    systemPrompt: REACT_SYSTEM_PROMPT,
    nativeTools: [...TOOL_NAMES, ...HELPERS],
    parsesTags: false,
  },
};
