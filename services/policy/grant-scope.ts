import { z } from 'zod';

// What an `approve_for_session` answer grants (POLICY.md §7): `exact` the same
// command (always offered), `prefix` the matched rule's prefix (only where offered).
export const GrantScope = z.enum(['exact', 'prefix']);
export type GrantScope = z.infer<typeof GrantScope>;
