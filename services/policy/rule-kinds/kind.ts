// What every kind of rule provides (command rules, path rules, the network
// rules of POLICY.md §8). A kind owns fields of the policy file (`command`,
// `path`, `host` with `port` and `cidr`), the tools it judges, how that field compiles, how a
// compiled rule matches its subject, and how an `examples` entry is read.
// The registry (index.ts) chooses a rule's kind; nothing else asks which
// tools a rule names to find out how it matches.
import type { ToolDescriptor, ToolName } from '../../protocol/index.ts';
import type { Decision } from '../decision.ts';
import type { AppliesTo, RuleInput } from '../schema.ts';

export type Layer = 'global' | 'project' | 'session';

/** How a kind's subjects are judged: a tool's descriptor (protocol/tools.ts), or `connections` for `tool: network`. */
export type Judged = ToolDescriptor['judged'] | 'connections';

/** What every compiled rule carries, whatever its kind. */
export type RuleHead = {
  id: string;
  layer: Layer;
  /** File the rule came from, and its index there: for messages. */
  file: string;
  index: number;
  /** The tf-* tools it judges; empty for a network rule (a connection is no tool call). */
  tools: ReadonlySet<ToolName>;
  decision: Decision;
  justification: string;
  /** `applies_to`: commands, and/or seeded and uploaded files (judged as writes of their paths). */
  appliesTo: ReadonlySet<AppliesTo>;
};

/** Stops loading with `FILE: rules[INDEX] (ID): reason` (POLICY.md §6). */
export type Fail = (reason: string) => never;

/** One `examples.match` / `not_match` entry: a string (a command line, a path, …) or an argv. */
export type Example = string | readonly string[];

/** One `except` entry as validated: an argv pattern (a list) or a glob (a string). */
export type ExceptInput = NonNullable<RuleInput['except']>[number];

/**
 * A kind of rule. `R` is its compiled rule (a `RuleHead` with its own `kind`
 * tag and fields), `S` the subject it judges: an argv, a normalised path.
 */
export interface RuleKind<R extends RuleHead & { kind: string }, S> {
  readonly kind: R['kind'];
  /** The policy file field that makes a rule of this kind. */
  readonly field: 'command' | 'path' | 'host';
  /** Other fields that make a rule of this kind (`cidr`, `port` of a network rule). */
  readonly otherFields: readonly ('cidr' | 'port')[];
  /** The tools it judges: those whose descriptor (protocol/tools.ts) is judged so; `network` for `connections`. */
  readonly judged: Judged;
  /** The load error for its field on a rule naming a tool it does not judge (a network rule's field on a tf-* tool, and so on). */
  readonly otherTools: string;
  /** The load error for `except[k]` when the entry is not of this kind's shape, else undefined. */
  refuseExcept(entry: ExceptInput, k: number): string | undefined;
  /** The compiled rule: `head` plus its field and `except` (both already validated by the schema). */
  compile(head: RuleHead, input: RuleInput, fail: Fail): R;
  /** Hot path: compiled once, matched per evaluation without allocating. */
  matches(rule: R, subject: S): boolean;
  /** Whether the rule matches one examples entry; `fail` for an entry this kind cannot read. */
  matchesExample(rule: R, example: Example, fail: Fail): boolean;
}
