import type { TranscriptInput } from '../../../services/replay-model/transcript.ts';

// Scripted models for the end-to-end tests. Each is chosen by a phrase in the task.

const fiveFiles = (chunk: number, match: string): TranscriptInput => ({
  name: `five-files-${chunk}`, match, chunk, delay_ms: 0,
  turns: [{
    reasoning: [
      'Plan: a folder, then five files.',
      '<tf-mkdir id="1" path="pkg/sub" />',
      ...[1, 2, 3, 4, 5].map((n) => `<tf-write id="${n + 1}" path="pkg/sub/f${n}.txt">\nfile ${n} é€😀\n</tf-write>`),
    ].join('\n'),
    text: 'Five files written. `<tf-write id="9" path="not-run.txt">x</tf-write>` is only an example.',
  }],
});

export const TRANSCRIPTS: TranscriptInput[] = [
  fiveFiles(24, 'five files please'),
  fiveFiles(1, 'five files in one-byte deltas'),
  {
    name: 'failure', match: 'failing edit', delay_ms: 5, chunk: 16,
    turns: [
      {
        reasoning: '<tf-write id="1" path="a.txt">\nhello\n</tf-write>\n<tf-edit id="2" path="a.txt"><old>nope</old><new>x</new></tf-edit>\n<tf-write id="3" path="c.txt">\nlater\n</tf-write>\n',
        text: 'All done (not really).',
      },
      {
        reasoning: '<tf-edit id="4" path="a.txt"><old>hello</old><new>bonjour</new></tf-edit>\n<tf-write id="5" path="c.txt">\nlater\n</tf-write>\n',
        text: 'Fixed: a.txt says bonjour, c.txt written.',
      },
    ],
  },
  {
    name: 'reuse', match: 'reuse a failed id', delay_ms: 0,
    turns: [
      { reasoning: '<tf-edit id="1" path="missing.txt"><old>a</old><new>b</new></tf-edit>', text: '' },
      { reasoning: '<tf-write id="1" path="missing.txt">\na\n</tf-write>', text: '' },
      { reasoning: '<tf-write id="2" path="missing.txt">\na\n</tf-write>', text: 'Created it.' },
    ],
  },
  {
    name: 'need-result', match: 'read it back', delay_ms: 0,
    turns: [
      {
        reasoning: '<tf-write id="1" path="x.txt">\n42\n</tf-write>\n<tf-read id="2" path="x.txt" />\n<tf-write id="3" path="never.txt">\nnot written: the stream stops at the read\n</tf-write>',
        text: '',
      },
      { reasoning: '<tf-write id="4" path="y.txt">\nseen 42\n</tf-write>', text: 'x.txt holds 42; y.txt written.' },
    ],
  },
  {
    name: 'never', match: 'install a package', delay_ms: 0,
    turns: [
      { reasoning: '<tf-bash id="1" cmd="npm install left-pad" />\n<tf-write id="2" path="after.txt">\nskipped\n</tf-write>', text: '' },
      { reasoning: '', text: 'Installing packages is not allowed here; I stopped.' },
    ],
  },
  {
    name: 'approval', match: 'touch the guarded file', delay_ms: 0,
    turns: [{ reasoning: '<tf-touch id="1" path="guarded/ok.txt" />\n<tf-write id="2" path="after.txt">\nafter approval\n</tf-write>', text: 'Touched it.' }],
  },
  {
    name: 'slow', match: 'take your time', delay_ms: 40, chunk: 4,
    turns: [{ reasoning: `<tf-write id="1" path="slow.txt">\n${'slow text '.repeat(200)}\n</tf-write>`, text: 'finished' }],
  },
  {
    name: 'endless', match: 'never finish', delay_ms: 0,
    turns: [{ reasoning: '<tf-bash id="1" cmd="ls" need_result="true" />', text: '' }],
  },
];
