// The per-file diffs of a preview (services/sandbox/preview-diff.ts), cut
// from a patch in git-patch.mjs's format: headers matched the way git quotes
// names, binary sections and mode-only changes without a diff, each bound.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { fileDiffs, gitQuoted, readBounded } from '../../../services/sandbox/preview-diff.ts';
// @ts-expect-error the executor's plain .mjs module has no types (a .d.mts beside it would change the image's inputs)
import { quoted as executorQuoted } from '../../../sandbox-image/executor/git-patch.mjs';

// The executor's own quoting: the headers must match it exactly.
const quoted = executorQuoted as (prefix: string, path: string) => string;

const section = (path: string, body: string) => `diff --git ${gitQuoted('a/', path)} ${gitQuoted('b/', path)}\nindex 1..2 100644\n${body}`;

describe('preview diffs', () => {
  it('quotes names as git-patch.mjs does (its paths are bytes read as latin1)', () => {
    for (const p of ['plain.txt', 'dir/with space.md', 'naïve.txt', 'tab\there', 'q"uote\\', '日本.txt']) {
      expect(gitQuoted('a/', p)).toBe(quoted('a/', Buffer.from(p, 'utf8').toString('latin1')));
    }
  });

  it('gives each text file its hunks; binary and mode-only sections get none', () => {
    const patch = [
      section('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n'),
      section('img.png', 'GIT binary patch\nliteral 3\nKcmZ?\n\nliteral 0\nHcmV?d00001\n\n'),
      'diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n',
      section('naïve.txt', '--- /dev/null\n+++ "b/na\\303\\257ve.txt"\n@@ -0,0 +1 @@\n+hi\n'),
    ].join('');
    const d = fileDiffs(patch, ['a.txt', 'img.png', 'run.sh', 'naïve.txt', 'absent.txt'], 1000, false);
    expect([...d.keys()]).toEqual(['a.txt', 'naïve.txt']);
    expect(d.get('a.txt')).toEqual({ diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n', truncated: false });
    expect(d.get('naïve.txt')!.diff).toMatch(/\+hi\n$/);
  });

  it('cuts a long diff, and marks the last section of a patch read only in part', () => {
    const long = section('big.txt', `--- a/big.txt\n+++ b/big.txt\n@@ -1,500 +1,500 @@\n${'-x\n+y\n'.repeat(500)}`);
    const d = fileDiffs(long + section('last.txt', '--- a/last.txt\n+++ b/last.txt\n@@ -1 +1 @@\n-a\n'), ['big.txt', 'last.txt'], 100, true);
    expect(d.get('big.txt')).toMatchObject({ truncated: true });
    expect(d.get('big.txt')!.diff).toHaveLength(100);
    expect(d.get('last.txt')).toMatchObject({ truncated: true });
  });

  it('reads a stream up to its bound and says it was cut', async () => {
    expect(await readBounded(Readable.from([Buffer.from('abc'), Buffer.from('def')]), 4)).toEqual({ text: 'abcd', cut: true });
    expect(await readBounded(Readable.from([Buffer.from('abc')]), 4)).toEqual({ text: 'abc', cut: false });
  });
});
