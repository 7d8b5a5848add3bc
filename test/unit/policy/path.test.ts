import { describe, expect, it } from 'vitest';
import { normalizeWorkspacePath } from '../../../services/policy/index.ts';

describe('normalizeWorkspacePath', () => {
  it.each([
    ['src/a.ts', 'src/a.ts'],
    ['./src/a.ts', 'src/a.ts'],
    ['src//a.ts', 'src/a.ts'],
    ['src/./lib/../a.ts', 'src/a.ts'],
    ['src/', 'src'],
    ['.', '.'],
    ['./', '.'],
    ['/workspace', '.'],
    ['/workspace/', '.'],
    ['/workspace/src/a.ts', 'src/a.ts'],
    ['/workspace//src/../b', 'b'],
    ['a/b/../../c', 'c'],
    ['.git', '.git'],
    ['.git/config', '.git/config'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeWorkspacePath(input)).toEqual({ ok: true, path: expected });
  });

  it.each([
    '../x',
    '..',
    'a/../../x',
    './../x',
    '/etc/passwd',
    '/',
    '/workspace/../etc/passwd',
    '/workspace2/x',
    '/workspacex',
    '/tmp/workspace/x',
  ])('%s is outside the workspace', (input) => {
    const r = normalizeWorkspacePath(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('path_outside_workspace');
  });

  it('refuses empty paths and NUL bytes without calling them outside', () => {
    const empty = normalizeWorkspacePath('');
    const nul = normalizeWorkspacePath('a\0b');
    expect(empty.ok).toBe(false);
    expect(nul.ok).toBe(false);
    if (!empty.ok) expect(empty.reason).toMatch(/^empty_path/);
    if (!nul.ok) expect(nul.reason).toMatch(/^invalid_path/);
  });
});
