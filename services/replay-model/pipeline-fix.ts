// The scripted model behind examples/pipeline.sh: a pipeline hands over a
// small repository whose greeting is wrong and a validator (`npm test`, which
// runs test.sh).
// The first attempt fixes the typo, adds a changelog and removes the to-do
// file, but the validator still fails (the test wants "!"); the validator's
// feedback makes the second attempt finish the fix and update the README.
// So the job succeeds in 2 validation rounds and its patch edits two files,
// adds one and deletes one.
import type { TranscriptInput } from './transcript.ts';

export const PIPELINE_TASK = 'Fix the greeting in greet.sh so that test.sh passes; note the change in a CHANGELOG.md and drop TODO.md, which it resolves.';

const FIRST = [
  'greet.sh misspells "Hello". I fix it, note it in a changelog and remove the to-do it resolves.',
  '<tf-edit id="1" path="greet.sh"><old>Helo, $1</old><new>Hello, $1</new></tf-edit>',
  '<tf-write id="2" path="CHANGELOG.md">\n# Changelog\n\n- greet.sh: the greeting is spelled correctly.\n</tf-write>',
  '<tf-bash id="3" cmd="rm TODO.md" />',
].join('\n');

const SECOND = [
  'The validator shows test.sh expects "Hello, world!" with an exclamation mark. I add it and say so in the README.',
  '<tf-edit id="4" path="greet.sh"><old>Hello, $1"</old><new>Hello, $1!"</new></tf-edit>',
  '<tf-edit id="5" path="README.md"><old>Says hello.</old><new>Says hello, with an exclamation mark.</new></tf-edit>',
].join('\n');

export const PIPELINE_FIX: TranscriptInput = {
  name: 'pipeline-fix/thinkflow',
  match: 'fix the greeting in greet.sh',
  flow: 'thinkflow',
  turns: [
    { reasoning: FIRST, text: 'The greeting is fixed.' },
    { reasoning: SECOND, text: 'greet.sh now prints "Hello, NAME!", which test.sh expects; the README says so.' },
  ],
};
