// Types of file-tools.mjs for the host's tests (the executor itself is plain JavaScript on the image's Node).
export type ToolLimits = { readCapBytes: number; outputCapBytes: number; workspaceQuotaBytes: number };
export type ToolQuota = { kernel?: boolean; exceeds(limitBytes: number, moreBytes: number): boolean };
export type ToolFn = (command: Record<string, unknown>, limits: ToolLimits, quota?: ToolQuota) => Promise<Record<string, unknown>>;
/** One function per file tool of services/protocol/tools.ts, by name. */
export const TOOLS: Readonly<Record<string, ToolFn>>;
export function utf8Prefix(buf: Buffer): string;
