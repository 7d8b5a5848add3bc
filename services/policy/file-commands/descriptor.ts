// One path-aware command, as data: the options it takes and which of its
// operands and option values are write targets. Like a policy rule, a
// descriptor carries examples that say what it reads out of a command line;
// test/unit/policy/file-commands.test.ts checks every one (`checkExamples`).
import type { OptionSpec, ParsedOptions } from './options.ts';
import type { TargetSink } from './targets.ts';
import type { Word } from '../shell-lexer.ts';

/** A command line and what it writes (`scope:path`, see showTarget), or `complex` when it cannot be read. */
export type DescriptorExample = readonly [cmd: string, writes: readonly string[] | 'complex'];

export type Descriptor = {
  programs: readonly string[];
  options: OptionSpec;
  /** Options end at the first operand (`find`'s expression, `chmod -x` after the mode …); default: GNU permutation. */
  stopAtOperand?: boolean;
  /** Words that look like options but are operands (`chmod -x`). */
  operand?: RegExp;
  /** Rewrites the words after the program before parsing (tar's old-style bundle), or says why they cannot be read. */
  prepare?: (words: readonly Word[]) => Word[] | string;
  /** Only these subcommands are path-aware (`git init`); others are left to the rules. */
  subcommands?: readonly string[];
  /** Hands every write target to the sink, from the parsed options and operands. */
  targets: (p: ParsedOptions, sink: TargetSink) => void;
  examples: readonly DescriptorExample[];
};
