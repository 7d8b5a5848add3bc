// The in-container executor implements exactly the tools of the descriptor
// table: a tool added to protocol/tools.ts without its executor function (or
// an executor function no descriptor names) fails here, not in production.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_NAMES, TOOLS } from '../../../services/protocol/index.ts';

import type { ToolFn } from '../../../sandbox-image/executor/file-tools.mjs';

let executorTools: Readonly<Record<string, ToolFn>>;
let workspace: string;

beforeAll(async () => {
  // paths.mjs reads the workspace root once, at import.
  workspace = await mkdtemp(join(tmpdir(), 'tf-exec-tools-'));
  process.env.THINKFLOW_WORKSPACE = workspace;
  executorTools = (await import('../../../sandbox-image/executor/file-tools.mjs')).TOOLS;
});
afterAll(async () => {
  delete process.env.THINKFLOW_WORKSPACE;
  await rm(workspace, { recursive: true, force: true });
});

describe('executor ↔ tool descriptors', () => {
  it('every tool judged by paths has an executor function, and no executor function lacks a descriptor', () => {
    const fileTools = TOOL_NAMES.filter((t) => TOOLS[t].judged === 'paths');
    expect(Object.keys(executorTools).sort()).toEqual([...fileTools].sort());
    for (const t of fileTools) expect(typeof executorTools[t], t).toBe('function');
  });

  it('the only script tool is bash, which bash-tool.mjs runs', () => {
    expect(TOOL_NAMES.filter((t) => TOOLS[t].judged === 'script')).toEqual(['bash']);
  });

  it('the functions are the real tools: write then copy then read on a real directory', async () => {
    const limits = { readCapBytes: 1024, outputCapBytes: 1024, workspaceQuotaBytes: 1 << 20 };
    const quota = { kernel: true, exceeds: () => false };
    await executorTools.write!({ path: 'a.txt', content: 'hello' }, limits, quota);
    await executorTools.copy!({ path: 'a.txt', dest: 'b.txt' }, limits, quota);
    expect(await readFile(join(workspace, 'b.txt'), 'utf8')).toBe('hello');
    await writeFile(join(workspace, 'c.txt'), 'x');
    const r = await executorTools.read!({ path: 'c.txt' }, limits, quota);
    expect(r.stdout).toBe('x');
  });
});
