// find writes with -delete (each start path, whole when nothing filters what
// is deleted, else "some entries" under it) and with -fprint/-fprint0/-fls/
// -fprintf FILE. -exec and friends are wrappers (wrappers.ts); a `{}` in a
// path argument of what they run is unknown. A primary not listed here is
// not understood.
import type { Descriptor } from './descriptor.ts';
import { optionSpec } from './options.ts';
import type { Word } from '../shell-lexer.ts';
import type { TargetSink } from './targets.ts';

/** Primaries that do not narrow what -delete deletes. */
const UNFILTERED = new Set(['-depth', '-d', '-daystart', '-follow', '-ignore_readdir_race', '-noignore_readdir_race', '-mount', '-xdev', '-noleaf',
  '-warn', '-nowarn', '-print', '-print0', '-ls', '-delete', '-true', '-mindepth', '-maxdepth', '-printf', '-fprint', '-fprint0', '-fls', '-fprintf']);
const NO_VALUE = new Set([...UNFILTERED, '-empty', '-executable', '-readable', '-writable', '-false', '-nogroup', '-nouser', '-prune', '-quit',
  '-o', '-or', '-a', '-and', '-not', '!', '(', ')', ',']);
const ONE_VALUE = new Set(['-maxdepth', '-mindepth', '-amin', '-anewer', '-atime', '-cmin', '-cnewer', '-ctime', '-fstype', '-gid', '-group', '-ilname',
  '-iname', '-inum', '-ipath', '-iregex', '-iwholename', '-links', '-lname', '-mmin', '-mtime', '-name', '-newer', '-path', '-perm', '-regex', '-regextype',
  '-samefile', '-size', '-type', '-uid', '-used', '-user', '-wholename', '-xtype', '-context', '-printf', '-fprint', '-fprint0', '-fls', '-files0-from']);
const WRITES_FILE = new Set(['-fprint', '-fprint0', '-fls', '-fprintf']);
const EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);

function findTargets(words: readonly Word[], sink: TargetSink): void {
  let k = 0;
  const starts: Word[] = [];
  while (k < words.length && !/^[-(!,)]/.test(words[k]!.text)) starts.push(words[k++]!);
  let deletes = false;
  let filtered = false;
  while (k < words.length) {
    const a = words[k]!.text;
    if (EXEC.has(a)) {
      // The command runs per file; wrappers.ts reads it. It filters too (its exit status is a test).
      while (k < words.length && words[k]!.text !== ';' && words[k]!.text !== '+') k++;
      k++;
      filtered = true;
      continue;
    }
    if (WRITES_FILE.has(a)) sink.write(words[k + 1], 'self');
    if (a === '-delete') deletes = true;
    else if (!UNFILTERED.has(a)) filtered = true;
    if (a === '-fprintf') k += 3;
    else if (ONE_VALUE.has(a) || /^-newer[amcBt][amcBt]$/.test(a)) k += 2;
    else if (NO_VALUE.has(a)) k += 1;
    else { sink.unknown(`primary '${a}'`); return; }
  }
  if (!deletes) return;
  const where = starts.length > 0 ? starts : [{ kind: 'word' as const, text: '.', quoted: false, lit: 1, expanded: false, brace: false }];
  for (const s of where) (filtered ? sink.below(s) : sink.write(s, 'tree'));
}

export const find: Descriptor = {
  programs: ['find'],
  options: optionSpec({ flag: ['-H', '-L', '-P'], value: ['-D'], optional: ['-O'] }),
  stopAtOperand: true,
  operand: /^-(?![HLPDO]$|O[0-9]$)|^[(!,)]$/,
  targets: (p, sink) => findTargets(p.operands, sink),
  examples: [
    ['find . -delete', ['tree:.']],
    ['find . -mindepth 1 -delete', ['tree:.']],
    ['find -delete', ['tree:.']],
    ['find /workspace -depth -delete', ['tree:/workspace']],
    ['find . -name "*.pyc" -delete', ['some.:.']],
    ['find build -type f -delete', ['some.:build']],
    ['find . -name x -fprint .git/hooks/pre-commit', ['self:.git/hooks/pre-commit']],
    ['find . -fprintf .git/config "%p" -quit', ['self:.git/config']],
    ['find -L src -name "*.ts" -exec grep -l x {} +', []],
    ['find . -newermt 2024-01-01 -print', []],
    ['find . -frobnicate', 'complex'],
  ],
};
