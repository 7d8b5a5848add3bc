import { z } from 'zod';
import { Decision } from './decision.ts';

// A rule that matched a command, as every verdict carries it (POLICY.md §6)
// and the ledger, events and API show it: the one schema of the concept.
export const MatchedRule = z.object({
  id: z.string(),
  /** the layer the rule came from; `builtin` for the engine's own rules (the workspace invariant) */
  layer: z.enum(['global', 'project', 'session', 'builtin']),
  decision: Decision,
  justification: z.string(),
});
export type MatchedRule = z.infer<typeof MatchedRule>;
