// Archive tools: what an extraction writes is in the archive, so it is
// "some entries under the directory it extracts to" (`-C`, `--directory`,
// `-d`). A rule covering every entry there (`.git/**` for `-C .git`) applies;
// one that may cover some (`.git/**` for an extraction into the workspace
// root) makes the script complex. Options that run programs
// (`--to-command`, `-I`, `--checkpoint-action`) are not understood.
import type { Descriptor } from './descriptor.ts';
import { has, optionSpec, values } from './options.ts';
import type { Word } from '../shell-lexer.ts';

const TAR_MODES = ['-x', '--extract', '--get', '-c', '--create', '-r', '--append', '-u', '--update', '-t', '--list', '-d', '--diff', '--compare', '-A', '--catenate', '--concatenate', '--delete'];

const TAR_VALUE_LETTERS = /[fCTXbHN]/g;

/** Old-style `tar xzf a.tar`: the first word is a bundle of letters whose values follow in order; one value letter reads like `-xzf a.tar`. */
function oldStyle(words: readonly Word[]): Word[] | string {
  const first = words[0];
  if (first === undefined || first.text.startsWith('-') || !/^[A-Za-z]+$/.test(first.text)) return [...words];
  if ((first.text.match(TAR_VALUE_LETTERS) ?? []).length > 1) return `option bundle '${first.text}' with several values`;
  return [{ ...first, text: `-${first.text}` }, ...words.slice(1)];
}

export const tar: Descriptor = {
  programs: ['tar', 'gtar', 'bsdtar'],
  prepare: oldStyle,
  options: optionSpec({
    flag: [...TAR_MODES, '-v', '--verbose', '-z', '--gzip', '-j', '--bzip2', '-J', '--xz', '--zstd', '--lzma', '--lzip', '-a', '--auto-compress', '-p', '--preserve-permissions',
      '--same-owner', '--no-same-owner', '--no-same-permissions', '-k', '--keep-old-files', '--overwrite', '-O', '--to-stdout', '-m', '--touch', '-h', '--dereference',
      '-P', '--absolute-names', '--numeric-owner', '--wildcards', '--no-wildcards', '--anchored', '-S', '--sparse', '-W', '--verify', '--totals', '--one-file-system',
      '--no-recursion', '--recursion', '--null', '--posix', '--exclude-vcs', '--exclude-vcs-ignores', '-U', '--unlink-first', '--recursive-unlink', '--remove-files',
      '--keep-newer-files', '--skip-old-files', '-i', '--ignore-zeros', '--help', '--version', '-o', '--no-overwrite-dir'],
    value: ['-f', '--file', '-C', '--directory', '--strip-components', '--exclude', '--owner', '--group', '--mode', '--mtime', '-T', '--files-from',
      '-X', '--exclude-from', '--warning', '-b', '--blocking-factor', '--sort', '--format', '-H', '--transform', '--xform', '-N', '--newer', '--newer-mtime'],
  }),
  targets: (p, sink) => {
    if (has(p, '-x', '--extract', '--get')) {
      if (has(p, '-O', '--to-stdout')) return;
      const dirs = values(p, '-C', '--directory');
      if (dirs.length === 0) sink.below({ kind: 'word', text: '.', quoted: false, lit: 1, expanded: false, brace: false });
      for (const d of dirs) sink.below(d);
      if (has(p, '-P', '--absolute-names')) sink.below({ kind: 'word', text: '/', quoted: false, lit: 1, expanded: false, brace: false });
      return;
    }
    if (has(p, '-c', '--create', '-r', '--append', '-u', '--update', '-A', '--catenate', '--concatenate', '--delete')) {
      for (const f of values(p, '-f', '--file')) if (f.text !== '-') sink.write(f, 'self');
      if (has(p, '--remove-files')) for (const w of p.operands) sink.write(w, 'tree');
    }
  },
  examples: [
    ['tar -xf payload.tar -C .git', ['some.:.git']],
    ['tar xzf payload.tgz --directory=.git/hooks', ['some.:.git/hooks']],
    ['tar -xf a.tar', ['some.:.']],
    ['tar -tf a.tar', []],
    ['tar -czf .git/x.tgz src', ['self:.git/x.tgz']],
    ['tar -xf a.tar --to-command=sh', 'complex'],
    ['tar -x -I ./x -f a.tar', 'complex'],
    ['tar cfC a.tar dir src', 'complex'],
  ],
};

export const unzip: Descriptor = {
  programs: ['unzip'],
  options: optionSpec({
    flag: ['-o', '-n', '-q', '-j', '-l', '-t', '-v', '-p', '-a', '-b', '-C', '-L', '-X', '-u', '-f', '-x', '-Z', '-z', '-T', '-U', '-V', '-W', '-K', '-M', '-D', '-h'],
    value: ['-d', '-P'],
  }),
  targets: (p, sink) => {
    if (has(p, '-l', '-t', '-v', '-p', '-Z', '-z', '-h')) return;
    const dirs = values(p, '-d');
    if (dirs.length === 0) sink.below({ kind: 'word', text: '.', quoted: false, lit: 1, expanded: false, brace: false });
    for (const d of dirs) sink.below(d);
  },
  examples: [['unzip -o x.zip -d .git', ['some.:.git']], ['unzip -l x.zip', []], ['unzip -q x.zip', ['some.:.']]],
};
