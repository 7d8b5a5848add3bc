// Properties of the splitter, with shell-quote's `quote` as an independent
// oracle for quoting: whatever argv it quotes, we must read back exactly.
import fc from 'fast-check';
import { quote } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { splitScript } from '../../../services/policy/index.ts';

const SEPARATORS = [' && ', ' || ', '; ', ';', ' | ', '|', ' |& ', ' & ', '\n', ' &&\n '];
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;
const token = fc.string({ unit: fc.constantFrom(...'ab-_./=:@%+,*?[]{}~#!$`\'"\\ ;&|<>()\t'.split('')), minLength: 1, maxLength: 8 });
// A leading `NAME=` word is an assignment, not the command (tested elsewhere).
const argv = fc.array(token, { minLength: 1, maxLength: 5 }).filter((a) => !ASSIGNMENT.test(a[0]!));

describe('splitScript properties', () => {
  it('reads back every argv that shell-quote quoted, across every separator', () => {
    fc.assert(
      fc.property(fc.array(argv, { minLength: 1, maxLength: 5 }), fc.array(fc.constantFrom(...SEPARATORS), { minLength: 4, maxLength: 4 }), (cmds, seps) => {
        const script = cmds.map((a) => quote(a)).reduce((acc, q, k) => `${acc}${seps[(k - 1) % seps.length]}${q}`);
        const r = splitScript(script);
        expect(r.complex, script).toBeUndefined();
        expect(r.commands).toEqual(cmds);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws and always terminates on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'ab $(){}`\'"\\;&|<>!#\n~=0123'.split('')), maxLength: 60 }), (s) => {
        const r = splitScript(s);
        expect(Array.isArray(r.commands)).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('a forbidden command hidden anywhere in a complex script is still read out', () => {
    const wrappers = ['(X)', '{ X; }', 'echo $(X)', 'echo "$(X)"', 'echo `X`', 'if true; then X; fi', 'for i in 1; do X; done', 'while true; do X; done', 'diff <(X) y', '! X', 'f() { X; }', 'function f { X; }', 'until false; do X; done', 'case a in a) X;; esac', '[[ -n a ]] && X', 'if ! X; then :; fi'];
    for (const w of wrappers) {
      const r = splitScript(w.replace('X', 'rm -rf /'));
      expect(r.complex, w).toBeDefined();
      expect(r.commands, w).toContainEqual(['rm', '-rf', '/']);
    }
  });
});
