// The policy file format of POLICY.md §2 as zod schemas. Strict everywhere:
// an unknown field is a typo that would otherwise silently disable a rule.
import { z } from 'zod';
import { TOOL_NAMES, ToolName } from '../protocol/index.ts';
import { Decision } from './decision.ts';

/**
 * What a rule's `tool` names: the tf-* tools, and `network` for the
 * connections of the egress proxy (POLICY.md §8), which is no tf-* tool.
 */
export const NETWORK = 'network';
export const RuleTool = z.union([ToolName, z.literal(NETWORK)]);
export type RuleTool = z.infer<typeof RuleTool>;
export const RULE_TOOLS: readonly RuleTool[] = [...TOOL_NAMES, NETWORK];

export const DEFAULT_KEYS = [...TOOL_NAMES, NETWORK, 'complex_command'] as const;
export type DefaultKey = (typeof DEFAULT_KEYS)[number];

/** What a rule can judge (its `applies_to`). */
export const APPLIES_TO = ['commands', 'seeded_files'] as const;
export type AppliesTo = (typeof APPLIES_TO)[number];

// YAML reads `[chmod, 755]` as a number; a token is text, so take it as such
// rather than fail a file over unquoted digits.
const Word = z.union([z.string().min(1), z.number().transform(String)]);
const Token = z.union([Word, z.array(Word).min(1)], {
  error: 'expected a token (string) or a non-empty list of alternatives',
});
const PORT_RANGE = { error: 'a port is a whole number from 1 to 65535' };
const Port = z.number(PORT_RANGE).int(PORT_RANGE).min(1, PORT_RANGE).max(65535, PORT_RANGE);
const CommandPatternSchema = z.array(Token).min(1);
const Glob = z.string().min(1);
/** A string is one simple command (shell quoting), a path or a `host:port`; a list is an argv. */
const Example = z.union([z.string(), z.array(z.string()).min(1)]);

export const RuleSchema = z.strictObject({
  id: Word,
  tool: z
    .union([RuleTool, z.array(RuleTool).min(1)], { error: `expected one of ${RULE_TOOLS.join(', ')} or a list of them` })
    .optional(),
  command: CommandPatternSchema.optional(),
  path: z.union([Glob, z.array(Glob).min(1)], { error: 'expected a glob or a non-empty list of globs' }).optional(),
  // Network rules (tool: network): exact names or one leading `*.`, IP literals; ports; CIDRs.
  host: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], { error: 'expected a host or a non-empty list of hosts' }).optional(),
  port: z.union([Port, z.array(Port).min(1)], { error: 'expected a port (1-65535) or a non-empty list of ports' }).optional(),
  cidr: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], { error: 'expected a CIDR or a non-empty list of CIDRs' }).optional(),
  decision: Decision,
  justification: z.string().optional(),
  /**
   * What the rule judges: `commands` (every tool call, from any flow) and
   * `seeded_files` (a session's seeded `files` and uploaded archive entries,
   * judged as a `write` of their path). @default both
   */
  applies_to: z.array(z.enum(APPLIES_TO)).min(1).optional(),
  // Command rules: argv patterns; path rules: globs.
  except: z.array(z.union([CommandPatternSchema, Glob])).min(1).optional(),
  examples: z
    .strictObject({
      match: z.array(Example).optional(),
      not_match: z.array(Example).optional(),
    })
    .optional(),
});
export type RuleInput = z.infer<typeof RuleSchema>;

export const DefaultsSchema = z.strictObject(
  Object.fromEntries(DEFAULT_KEYS.map((k) => [k, Decision.optional()])) as Record<
    DefaultKey,
    z.ZodOptional<typeof Decision>
  >,
);
export type Defaults = Partial<Record<DefaultKey, z.infer<typeof Decision>>>;

/**
 * The file envelope. Rules are validated one by one afterwards so an error
 * can name the rule's index and id. `version` may be left out of a job's
 * inline `policy` body; when present it must be 1.
 */
export const PolicyFileSchema = z.strictObject({
  version: z.literal(1).optional(),
  defaults: DefaultsSchema.optional(),
  rules: z.array(z.unknown()).optional(),
});

/** zod issues as `field.sub[2]: message; …` for load errors. */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const where = i.path.reduce<string>(
        (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${String(seg)}` : String(seg)),
        '',
      );
      return where ? `${where}: ${i.message}` : i.message;
    })
    .join('; ');
}
