// Commands that put their sources at a destination: cp, mv, install, ln.
// The destination is written (as a file, or `dest/<basename>` when it is a
// directory: both are checked, since the text cannot tell); mv also removes
// its sources, whole trees included.
import type { Descriptor } from './descriptor.ts';
import { has, optionSpec, values, type ParsedOptions } from './options.ts';
import type { TargetSink } from './targets.ts';

const TARGET = ['-t', '--target-directory'];
const NO_TARGET_DIR = ['-T', '--no-target-directory'];
const BACKUP = { flag: ['-b', '-v', '--verbose', '-f', '--force', '-i', '--interactive', '--help', '--version'], value: ['-S', '--suffix', ...TARGET], optional: ['--backup'] };

/** Where a copy-like command writes; `scope` is what lands at each destination path. */
function copyTargets(p: ParsedOptions, sink: TargetSink, scope: 'self' | 'tree', lone: 'cwd' | 'none'): void {
  const dirs = values(p, ...TARGET);
  const ops = p.operands;
  if (dirs.length > 0) {
    for (const d of dirs) for (const s of ops) sink.into(d, s, scope);
    return;
  }
  if (ops.length === 1 && lone === 'cwd') { sink.into({ ...ops[0]!, text: '.', expanded: false, brace: false }, ops[0], scope); return; }
  if (ops.length < 2) return;
  const last = ops[ops.length - 1]!;
  const sources = ops.slice(0, -1);
  if (has(p, '--parents')) { sink.below(last); return; }
  if (has(p, ...NO_TARGET_DIR)) { sink.write(last, scope); return; }
  for (const s of sources) (sources.length > 1 ? sink.into(last, s, scope) : sink.dest(last, s, scope));
}

export const cp: Descriptor = {
  programs: ['cp'],
  options: optionSpec({
    flag: [...BACKUP.flag, '-a', '--archive', '--attributes-only', '--copy-contents', '-d', '-H', '-l', '--link', '-L', '--dereference', '-n', '--no-clobber',
      '-P', '--no-dereference', '-p', '--parents', '-R', '-r', '--recursive', '--remove-destination', '--strip-trailing-slashes', '-s', '--symbolic-link',
      '-T', '--no-target-directory', '-u', '--keep-directory-symlink', '-x', '--one-file-system', '-Z', '--debug'],
    value: [...BACKUP.value, '--no-preserve', '--sparse'],
    optional: [...BACKUP.optional, '--preserve', '--reflink', '--update', '--context'],
  }),
  targets: (p, sink) => copyTargets(p, sink, has(p, '-r', '-R', '--recursive', '-a', '--archive') ? 'tree' : 'self', 'none'),
  examples: [
    ['cp a.txt b.txt', ['self:b.txt', 'self:b.txt/a.txt']],
    ['cp x .git/config', ['self:.git/config', 'self:.git/config/x']],
    ['cp -r hooks .git/', ['tree:.git/hooks']],
    ['cp -t .git a b', ['self:.git/a', 'self:.git/b']],
    ['cp *.txt .git', ['self:.git', 'some.:.git']],
    ['cp --parents a/b dest', ['some.:dest']],
    ['cp -T a .git', ['self:.git']],
    ['cp a', []],
    ['cp --copy-program=x a b', 'complex'],
  ],
};

export const mv: Descriptor = {
  programs: ['mv'],
  options: optionSpec({
    flag: [...BACKUP.flag, '-n', '--no-clobber', '-T', '--no-target-directory', '-u', '-Z', '--context', '--strip-trailing-slashes', '--exchange', '--no-copy', '--debug'],
    value: BACKUP.value,
    optional: [...BACKUP.optional, '--update'],
  }),
  targets: (p, sink) => {
    const dirs = values(p, ...TARGET).length;
    p.operands.forEach((w, k) => { if (dirs > 0 || k < p.operands.length - 1) sink.write(w, 'tree'); });
    copyTargets(p, sink, 'tree', 'none');
  },
  examples: [
    ['mv config.new .git/config', ['tree:config.new', 'tree:.git/config', 'tree:.git/config/config.new']],
    ['mv .git old-git', ['tree:.git', 'tree:old-git', 'tree:old-git/.git']],
    ['mv -t dist a', ['tree:a', 'tree:dist/a']],
    ['mv a b c/', ['tree:a', 'tree:b', 'tree:c/a', 'tree:c/b']],
  ],
};

export const install: Descriptor = {
  programs: ['install'],
  options: optionSpec({
    flag: [...BACKUP.flag, '-c', '-C', '--compare', '-d', '--directory', '-D', '-p', '--preserve-timestamps', '-s', '--strip', '-T', '--no-target-directory', '-Z'],
    value: [...BACKUP.value, '-g', '--group', '-m', '--mode', '-o', '--owner'],
    optional: [...BACKUP.optional, '--context'],
  }),
  targets: (p, sink) => {
    if (has(p, '-d', '--directory')) for (const w of p.operands) sink.write(w, 'self');
    else copyTargets(p, sink, 'self', 'none');
  },
  examples: [
    ['install -m 755 hook .git/hooks/pre-commit', ['self:.git/hooks/pre-commit', 'self:.git/hooks/pre-commit/hook']],
    ['install -d .git/hooks', ['self:.git/hooks']],
    ['install --strip-program=./x a b', 'complex'],
  ],
};

export const ln: Descriptor = {
  programs: ['ln'],
  options: optionSpec({
    flag: [...BACKUP.flag, '-d', '-F', '--directory', '-L', '--logical', '-n', '--no-dereference', '-P', '--physical', '-r', '--relative', '-s', '--symbolic', '-T', '--no-target-directory'],
    value: BACKUP.value,
    optional: BACKUP.optional,
  }),
  targets: (p, sink) => copyTargets(p, sink, 'self', 'cwd'),
  examples: [
    ['ln -sf ../../x.sh .git/hooks/pre-commit', ['self:.git/hooks/pre-commit', 'self:.git/hooks/pre-commit/x.sh']],
    ['ln -s /tmp/x', ['self:./x']],
    ['ln -s -t .git/hooks ../pre-push', ['self:.git/hooks/pre-push']],
  ],
};
