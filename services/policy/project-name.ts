import { z } from 'zod';

// A project names a folder under `projects/` of the policy directory
// (POLICY.md §3), so it is a plain file name: no separators, no `..` escapes.
export const ProjectName = z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'project must be 1-100 of A-Z a-z 0-9 . _ -');
export type ProjectName = z.infer<typeof ProjectName>;
