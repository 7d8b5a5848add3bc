import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const RESULTS = fileURLToPath(new URL('../RESULTS.md', import.meta.url));
export const WORKSPACE_FS_HEADING = 'Sandbox: session creation with a filesystem per workspace';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Replaces the `## <heading>` section of bench/RESULTS.md (default `Sandbox`),
 * leaving other sections alone; a missing one goes after the `## Sandbox`
 * section, or at the end.
 */
export async function updateResults(command: string, output: string, heading = 'Sandbox'): Promise<void> {
  const current = await readFile(RESULTS, 'utf8').catch(() => '# Benchmarks\n');
  const section = `## ${heading}\n\n\`\`\`\n$ ${command}\n\`\`\`\n\n${output}\n`;
  const bounds = (h: string) => {
    const start = current.search(new RegExp(`^## ${escape(h)}\\s*$`, 'm'));
    if (start < 0) return null;
    const end = current.slice(start + 1).search(/^## /m);
    return { start, end: end < 0 ? current.length : start + 1 + end };
  };
  const own = bounds(heading);
  const after = own ? null : bounds('Sandbox');
  let next: string;
  if (own) next = `${current.slice(0, own.start)}${section}${own.end < current.length ? `\n${current.slice(own.end)}` : ''}`;
  else if (after) next = `${current.slice(0, after.end).trimEnd()}\n\n${section}${after.end < current.length ? `\n${current.slice(after.end)}` : ''}`;
  else next = `${current.trimEnd()}\n\n${section}`;
  await writeFile(RESULTS, next);
}
