// Commands the shipped policies call read-only that still write a file they
// are given: git's diff family with `--output=F` (content of the caller's
// choosing with `git log --format`), `sort -o F`, `uniq IN OUT`, `tree -o F`,
// and gzip/gunzip, which replace each operand by its (de)compressed twin. git and
// sort take far more options than a descriptor could list, so only the
// output option is read out of their words; every other word is left to the
// rules (it writes nothing).
import type { Word } from '../shell-lexer.ts';
import type { Descriptor } from './descriptor.ts';
import { optionSpec, values } from './options.ts';

const glue = (w: Word, text: string): Word => ({ ...w, text });
const writeOutputs: Descriptor['targets'] = (p, sink) => { for (const w of values(p, '--output')) sink.write(w, 'self'); };

/** `--output=F` / `--output F` up to `--`, as `--output=F` words. */
function longOutputs(words: readonly Word[]): Word[] {
  const out: Word[] = [];
  for (let k = 0; k < words.length; k++) {
    const a = words[k]!.text;
    if (a === '--') break;
    if (a.startsWith('--output=')) out.push(words[k]!);
    else if (a === '--output' && k + 1 < words.length) out.push(glue(words[k]!, `--output=${words[++k]!.text}`));
  }
  return out;
}

export const gitOutput: Descriptor = {
  programs: ['git'],
  subcommands: ['diff', 'log', 'show', 'whatchanged', 'diff-tree', 'diff-index', 'diff-files', 'range-diff', 'format-patch'],
  prepare: longOutputs,
  options: optionSpec({ value: ['--output'] }),
  targets: writeOutputs,
  examples: [
    ['git diff --output=.git/config', ['self:.git/config']],
    ['git log --format=%s --output .git/config', ['self:.git/config']],
    ['git diff --stat HEAD~1', []],
    ['git diff -- --output=x', []],
  ],
};

// sort's short options: these take no value, these take one (glued or next word).
const SORT_FLAGS = new Set('bdfghiMnRrsuzcCmV');
const SORT_VALUES = new Set('kotST');
// Long options of sort whose value may be the next word.
const SORT_LONG_VALUES = new Set(['--key', '--field-separator', '--buffer-size', '--temporary-directory', '--batch-size',
  '--compress-program', '--files0-from', '--parallel', '--random-source', '--sort', '--output']);

/** sort's `-o F` in any spelling (`-oF`, `-uoF`, `-u -o F`, `--output=F`), as `--output=F` words; an unknown short option makes it unreadable. */
function sortOutputs(words: readonly Word[]): Word[] | string {
  const out: Word[] = [];
  for (let k = 0; k < words.length; k++) {
    const w = words[k]!;
    const a = w.text;
    if (a === '--') break;
    if (a.startsWith('--')) {
      const name = a.split('=', 1)[0]!;
      const value = a.includes('=') ? a.slice(name.length + 1) : SORT_LONG_VALUES.has(name) ? words[++k]?.text : undefined;
      if (name === '--output' && value !== undefined) out.push(glue(w, `--output=${value}`));
      continue;
    }
    if (!a.startsWith('-') || a === '-') continue;
    for (let j = 1; j < a.length; j++) {
      const c = a[j]!;
      if (SORT_FLAGS.has(c)) continue;
      if (!SORT_VALUES.has(c)) return `option '-${c}'`;
      const value = j + 1 < a.length ? a.slice(j + 1) : words[++k]?.text;
      if (c === 'o' && value !== undefined) out.push(glue(w, `--output=${value}`));
      break;
    }
  }
  return out;
}

export const sort: Descriptor = {
  programs: ['sort'],
  prepare: sortOutputs,
  options: optionSpec({ value: ['--output'] }),
  targets: writeOutputs,
  examples: [
    ['sort -o .git/config x', ['self:.git/config']],
    ['sort -nuo.git/config x', ['self:.git/config']],
    ['sort -t o -k2 x', []],
    ['sort --output .git/config x', ['self:.git/config']],
    ['sort -k2 -n data.txt', []],
    ['sort -Q x', 'complex'],
  ],
};

export const uniq: Descriptor = {
  programs: ['uniq'],
  options: optionSpec({
    flag: ['-c', '--count', '-d', '--repeated', '-D', '-i', '--ignore-case', '-u', '--unique', '-z', '--zero-terminated', '--help', '--version'],
    value: ['-f', '--skip-fields', '-s', '--skip-chars', '-w', '--check-chars'],
    optional: ['--all-repeated', '--group'],
  }),
  targets: (p, sink) => sink.write(p.operands[1], 'self'),
  examples: [['uniq -c x .git/config', ['self:.git/config']], ['uniq -c x', []], ['uniq -f 1 a b', ['self:b']]],
};

// tree's short options that take the next word as their value, in cluster order (`-ao F`, `-Lo 2 F`).
const TREE_VALUES = new Set('LPIoHT');
const TREE_LONG_VALUES = new Set(['--charset', '--filelimit', '--timefmt', '--sort', '--hintro', '--houtro', '--infile']);

function treeOutputs(words: readonly Word[]): Word[] {
  const out: Word[] = [];
  for (let k = 0; k < words.length; k++) {
    const w = words[k]!;
    const a = w.text;
    if (a === '--') break;
    if (a.startsWith('--')) { if (!a.includes('=') && TREE_LONG_VALUES.has(a)) k++; continue; }
    if (!a.startsWith('-') || a === '-') continue;
    for (const c of a.slice(1)) {
      if (!TREE_VALUES.has(c)) continue;
      const value = words[++k];
      if (c === 'o' && value !== undefined) out.push(glue(w, `--output=${value.text}`));
    }
  }
  return out;
}

export const tree: Descriptor = {
  programs: ['tree'],
  prepare: treeOutputs,
  options: optionSpec({ value: ['--output'] }),
  targets: writeOutputs,
  examples: [['tree -o .git/config', ['self:.git/config']], ['tree -aLo 2 .git/config src', ['self:.git/config']], ['tree -L 2 src', []]],
};

const GZIP_LEVELS = ['-1', '-2', '-3', '-4', '-5', '-6', '-7', '-8', '-9'];

export const gzip: Descriptor = {
  programs: ['gzip', 'gunzip', 'uncompress'],
  options: optionSpec({
    flag: ['-c', '--stdout', '--to-stdout', '-d', '--decompress', '--uncompress', '-f', '--force', '-h', '--help', '-k', '--keep', '-l', '--list',
      '-L', '--license', '-n', '--no-name', '-N', '--name', '-q', '--quiet', '-r', '--recursive', '--rsyncable', '--synchronous', '-t', '--test',
      '-v', '--verbose', '-V', '--version', '--fast', '--best', ...GZIP_LEVELS],
    value: ['-S', '--suffix'],
  }),
  // The operand is replaced (removed, its twin written next to it); to stdout, listed or tested, nothing is written.
  targets: (p, sink) => {
    if (['-c', '--stdout', '--to-stdout', '-l', '--list', '-t', '--test'].some((o) => p.opts.has(o))) return;
    const recursive = p.opts.has('-r') || p.opts.has('--recursive');
    for (const w of p.operands) sink.write(w, recursive ? 'tree' : 'self');
  },
  examples: [['gzip .git/config', ['self:.git/config']], ['gunzip -r .git', ['tree:.git']], ['gzip -c a', []], ['gzip -9k a.log', ['self:a.log']]],
};
