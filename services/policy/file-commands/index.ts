// Path-aware file commands: which paths a simple command writes, read from
// its words by the descriptor of its program (one file per family). A
// command with no descriptor writes nothing that can be seen here (its
// redirections still count); one whose words a descriptor cannot read
// (an option it does not know, an expansion in a path) is complex.
import { lex, type Word } from '../shell-lexer.ts';
import type { Descriptor } from './descriptor.ts';
import { parseOptions } from './options.ts';
import { TargetSink, showTarget, type Targets } from './targets.ts';
import { rm, rmdir, shred } from './remove.ts';
import { cp, install, ln, mv } from './copy.ts';
import { chmod, chown, mkdir, tee, touch, truncate } from './create.ts';
import { sed } from './sed.ts';
import { tar, unzip } from './archive.ts';
import { find } from './find.ts';
import { dd } from './dd.ts';
import { gitInit, gitRm } from './git.ts';
import { gitOutput, gzip, sort, tree, uniq } from './output.ts';

export type { Scope, Target, Targets } from './targets.ts';
export { showTarget } from './targets.ts';

export const DESCRIPTORS: readonly Descriptor[] = [rm, rmdir, shred, cp, mv, install, ln, mkdir, touch, tee, truncate, chmod, chown, sed, tar, unzip, find, dd, gitInit, gitRm, gitOutput, sort, uniq, tree, gzip];

// A program may have several descriptors, one per set of subcommands (`git init`, `git diff`).
const BY_PROGRAM = new Map<string, Descriptor[]>();
for (const d of DESCRIPTORS) for (const p of d.programs) BY_PROGRAM.set(p, [...(BY_PROGRAM.get(p) ?? []), d]);
const NONE: Targets = { targets: [] };

/** True when the program (by base name) has a descriptor. */
export function isPathAware(program: string): boolean {
  return BY_PROGRAM.has(program.slice(program.lastIndexOf('/') + 1));
}

/**
 * The paths one simple command writes, as written (relative to its working directory).
 * @example commandTargets(words('mv a .git/config')).targets.map(showTarget) // ['tree:a', 'tree:.git/config', 'tree:.git/config/a']
 */
export function commandTargets(words: readonly Word[]): Targets {
  const head = words[0]?.text ?? '';
  const program = head.slice(head.lastIndexOf('/') + 1);
  const sub = words[1]?.text ?? '';
  const d = BY_PROGRAM.get(program)?.find((x) => !x.subcommands || x.subcommands.includes(sub));
  if (d === undefined) return NONE;
  let rest = words.slice(1);
  if (d.subcommands) {
    if (!d.subcommands.includes(rest[0]?.text ?? '')) return NONE;
    rest = rest.slice(1);
  }
  const prepared = d.prepare ? d.prepare(rest) : rest;
  if (typeof prepared === 'string') return { targets: [], complex: `${prepared} of ${program}` };
  const p = parseOptions(prepared, d.options, d.stopAtOperand, d.operand);
  if (p.unknown !== undefined) return { targets: [], complex: `${program} option '${p.unknown}' is not understood` };
  const sink = new TargetSink(program);
  d.targets(p, sink);
  return sink.complex === undefined ? { targets: sink.targets } : { targets: sink.targets, complex: sink.complex };
}

/** Every descriptor example that does not read as it says, as messages (empty: all hold). */
export function checkExamples(descriptors: readonly Descriptor[] = DESCRIPTORS): string[] {
  const bad: string[] = [];
  for (const d of descriptors) {
    for (const [cmd, want] of d.examples) {
      const words = lex(cmd).tokens.filter((t): t is Word => t.kind === 'word');
      if (!d.programs.includes(words[0]?.text ?? '')) { bad.push(`${d.programs[0]}: example ${JSON.stringify(cmd)} is not for this descriptor`); continue; }
      const got = commandTargets(words);
      const shown = got.complex !== undefined ? 'complex' : JSON.stringify(got.targets.map(showTarget));
      const expected = want === 'complex' ? 'complex' : JSON.stringify(want);
      if (shown !== expected) bad.push(`${d.programs[0]}: ${JSON.stringify(cmd)} reads as ${shown}${got.complex ? ` (${got.complex})` : ''}, expected ${expected}`);
    }
  }
  return bad;
}
