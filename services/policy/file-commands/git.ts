// `git init --template=DIR` copies DIR (hooks included) into the new or
// existing repository's git directory, and `--separate-git-dir` moves it:
// both write under the git directory. Other git commands are git's own
// business, judged by the rules.
import type { Descriptor } from './descriptor.ts';
import { has, optionSpec, values } from './options.ts';

export const gitInit: Descriptor = {
  programs: ['git'],
  subcommands: ['init'],
  options: optionSpec({
    flag: ['-q', '--quiet', '--bare', '--help'],
    value: ['--template', '--separate-git-dir', '--object-format', '--ref-format', '-b', '--initial-branch'],
    optional: ['--shared'],
  }),
  targets: (p, sink) => {
    const repo = p.operands[0] ?? { kind: 'word', text: '.', quoted: false, lit: 1, expanded: false, brace: false };
    const separate = values(p, '--separate-git-dir');
    if (has(p, '--template')) {
      if (separate.length > 0) for (const d of separate) sink.below(d);
      else sink.below(has(p, '--bare') ? repo : { ...repo, text: `${repo.text.replace(/\/+$/, '')}/.git` });
    }
    for (const d of separate) sink.below(d);
  },
  examples: [
    ['git init --template=./tpl', ['some.:./.git']],
    ['git init --template ./tpl sub', ['some.:sub/.git']],
    ['git init --bare --template=t repo.git', ['some.:repo.git']],
    ['git init', []],
    ['git init --separate-git-dir=.git/x', ['some.:.git/x']],
    ['git status --porcelain', []],
  ],
};

// `git rm` deletes its pathspecs from the working tree too (not with
// `--cached`): `git rm -r .` empties the workspace like `rm -rf .`.
export const gitRm: Descriptor = {
  programs: ['git'],
  subcommands: ['rm'],
  options: optionSpec({
    flag: ['-r', '-f', '--force', '-q', '--quiet', '-n', '--dry-run', '--cached', '--ignore-unmatch', '--sparse'],
  }),
  targets: (p, sink) => {
    if (has(p, '--cached', '-n', '--dry-run')) return;
    const scope = has(p, '-r') ? 'tree' : 'self';
    for (const w of p.operands) sink.write(w, scope);
  },
  examples: [
    ['git rm -r .', ['tree:.']],
    ['git rm -rf -- .', ['tree:.']],
    ['git rm old.txt', ['self:old.txt']],
    ['git rm -r --cached .', []],
    ['git rm --pathspec-from-file=list', 'complex'],
  ],
};
