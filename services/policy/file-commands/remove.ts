// Commands that delete their operands: a recursive delete is a write of the
// whole tree under each operand (so `rm -rf .` meets every protected path).
import type { Descriptor } from './descriptor.ts';
import { has, optionSpec } from './options.ts';

export const rm: Descriptor = {
  programs: ['rm'],
  options: optionSpec({
    flag: ['-f', '-i', '-I', '-r', '-R', '-d', '-v', '--force', '--recursive', '--dir', '--verbose', '--one-file-system', '--no-preserve-root', '--help', '--version'],
    optional: ['--interactive', '--preserve-root'],
  }),
  targets: (p, sink) => {
    const scope = has(p, '-r', '-R', '--recursive') ? 'tree' : 'self';
    for (const w of p.operands) sink.write(w, scope);
  },
  examples: [
    ['rm a.txt', ['self:a.txt']],
    ['rm -rf .', ['tree:.']],
    ['rm -r -f -- ./*', ['tree:.']],
    ['rm --recursive --force /workspace', ['tree:/workspace']],
    ['rm -f *.o', ['some:.']],
    ['rm -rf .*', ['some.:.']],
    ['rm -rf "$PWD"', ['tree:.']],
    ['rm -rf ${PWD}/src', ['tree:./src']],
    ['rm -rf $DIR', 'complex'],
    ['rm -Z x', 'complex'],
  ],
};

export const rmdir: Descriptor = {
  programs: ['rmdir', 'unlink'],
  options: optionSpec({ flag: ['-p', '--parents', '-v', '--verbose', '--ignore-fail-on-non-empty'] }),
  targets: (p, sink) => { for (const w of p.operands) sink.write(w, 'self'); },
  examples: [['rmdir -p .git/hooks', ['self:.git/hooks']], ['unlink .git/HEAD', ['self:.git/HEAD']]],
};

export const shred: Descriptor = {
  programs: ['shred'],
  options: optionSpec({
    flag: ['-f', '--force', '-u', '-v', '--verbose', '-x', '--exact', '-z', '--zero'],
    value: ['-n', '--iterations', '-s', '--size', '--random-source'],
    optional: ['--remove'],
  }),
  targets: (p, sink) => { for (const w of p.operands) sink.write(w, 'self'); },
  examples: [['shred -u -n 3 .git/index', ['self:.git/index']]],
};
