// sed writes files only in place (`-i`, `--in-place`, `-i.bak`, `-Ei`,
// `-ie` = suffix "e"). Its `w FILE` and `e` commands are not read here:
// sed is an interpreter (policies/README.md).
import type { Descriptor } from './descriptor.ts';
import { has, optionSpec } from './options.ts';

export const sed: Descriptor = {
  programs: ['sed', 'gsed'],
  options: optionSpec({
    flag: ['-n', '--quiet', '--silent', '-E', '-r', '--regexp-extended', '-s', '--separate', '-u', '--unbuffered', '-z', '--null-data',
      '-b', '--binary', '--posix', '--debug', '--sandbox', '--follow-symlinks', '--help', '--version'],
    value: ['-e', '--expression', '-f', '--file', '-l', '--line-length'],
    optional: ['-i', '--in-place'],
  }),
  targets: (p, sink) => {
    if (!has(p, '-i', '--in-place')) return;
    const files = has(p, '-e', '--expression', '-f', '--file') ? p.operands : p.operands.slice(1);
    for (const w of files) sink.write(w, 'self');
  },
  examples: [
    ['sed -i "s/a/b/" .git/config', ['self:.git/config']],
    ['sed --in-place=.bak -e "s/a/b/" .git/config src/x', ['self:.git/config', 'self:src/x']],
    ['sed -Ei "s/a/b/" .git/config', ['self:.git/config']],
    ['sed -ie "s/a/b/" .git/config', ['self:.git/config']],
    ['sed -i.bak -n 1p .git/config', ['self:.git/config']],
    ['sed -n 1,10p .git/config', []],
    ['sed -i -e x -f y', []],
    ['sed -x "s/a/b/" f', 'complex'],
  ],
};
