import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const RESULTS = fileURLToPath(new URL('../RESULTS.md', import.meta.url));

/** Replaces (or appends) the `## Sandbox` section of bench/RESULTS.md, leaving other sections alone. */
export async function updateResults(command: string, output: string): Promise<void> {
  const current = await readFile(RESULTS, 'utf8').catch(() => '# Benchmarks\n');
  const section = `## Sandbox\n\n\`\`\`\n$ ${command}\n\`\`\`\n\n${output}\n`;
  const start = current.search(/^## Sandbox\s*$/m);
  let next: string;
  if (start < 0) {
    next = `${current.trimEnd()}\n\n${section}`;
  } else {
    const rest = current.slice(start + 1);
    const end = rest.search(/^## /m);
    next = current.slice(0, start) + section + (end < 0 ? '' : `\n${rest.slice(end)}`);
  }
  await writeFile(RESULTS, next);
}
