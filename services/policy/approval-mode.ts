import { z } from 'zod';

// What a session does with a `prompt` decision (POLICY.md §4): `never`
// refuses it, `on-request` asks an operator. Sessions, jobs and the API use this schema.
export const ApprovalMode = z.enum(['never', 'on-request']);
export type ApprovalMode = z.infer<typeof ApprovalMode>;
