import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImports } from '../../../scripts/check-imports.ts';

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tf-imports-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('one-way imports (ARCHITECTURE.md)', () => {
  it('services/ has no import from a lower layer to a higher one, and none past a folder\'s index.ts', () => {
    expect(checkImports(resolve(import.meta.dirname, '../../../services'))).toEqual([]);
  });

  it('reports an upward import, a reach past the door and an unknown folder', () => {
    const root = tree({
      'protocol/index.ts': "export * from './command.ts';",
      'protocol/command.ts': "import type { X } from '../pipeline/index.ts';",
      'pipeline/index.ts': "export { a } from './a.ts';",
      'pipeline/a.ts': "import { b } from '../policy/parser.ts';\nexport const a = await import('../protocol/index.ts');",
      'policy/parser.ts': "export type { Y } from '../nowhere/index.ts';",
    });
    const found = checkImports(root).map((v) => `${v.file} ${v.why.split(':')[0]}`);
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/^protocol\/command\.ts protocol \(layer 1\) imports pipeline/),
      expect.stringMatching(/^pipeline\/a\.ts reaches into policy\/ past its door/),
      expect.stringMatching(/^policy\/parser\.ts imports outside the known folders/),
    ]));
    // the dynamic import of protocol's door from pipeline is allowed
    expect(found).toHaveLength(3);
  });
});
