// Types of build-profile.mjs for the unit test that checks the shipped profile.
export interface SeccompRule {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: unknown[];
  comment?: string;
  includes?: { caps?: string[]; arches?: string[]; minKernel?: string };
  excludes?: { caps?: string[]; arches?: string[] };
}
export interface SeccompProfile {
  defaultAction: string;
  archMap?: unknown[];
  syscalls: SeccompRule[];
}
export const UPSTREAM: string;
export const DENIED: Record<string, string>;
export function deriveProfile(upstream: SeccompProfile): SeccompProfile;
export function profileText(upstream: SeccompProfile): string;
