import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSizes, longFunctions } from '../../../scripts/check-sizes.ts';

describe('sizes (the guide: files under ~300 lines, functions under ~60 in pipeline and agent)', () => {
  it('services/ is within the limits', () => {
    expect(checkSizes(resolve(import.meta.dirname, '../../../services'))).toEqual([]);
  });

  it('measures declarations, methods and arrows, and names them', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join('\n');
    const text = [
      `function long() {\n  let x = 0;\n${body(60)}\n}`,
      `const arrow = () => {\n  let x = 0;\n${body(10)}\n};`,
      `class A {\n  method() {\n    let x = 0;\n${body(70)}\n  }\n}`,
    ].join('\n');
    expect(longFunctions('t.ts', text)).toEqual([{ name: 'long', lines: 63 }, { name: 'method', lines: 73 }]);
  });
});
