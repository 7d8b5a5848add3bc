import { createHash } from 'node:crypto';

/** Labels on every container and volume this module creates; the reaper finds them by these. */
export const LABEL_MANAGED = 'thinkflow.managed';
export const LABEL_SESSION = 'thinkflow.session';
export const LABEL_KIND = 'thinkflow.kind';

/** On a preview's throwaway container and volume (preview.ts), besides the others: what a clean-up check lists. */
export const LABEL_PREVIEW = 'thinkflow.preview';
/** A preview's sandbox is a session of its own, with an id no real session has (real ones are `ses_…`). */
export const PREVIEW_ID_PREFIX = 'preview_';
export const isPreviewId = (sessionId: string) => sessionId.startsWith(PREVIEW_ID_PREFIX);

export function labelsFor(sessionId: string, kind: 'sandbox' | 'workspace'): Record<string, string> {
  return { [LABEL_MANAGED]: 'true', [LABEL_SESSION]: sessionId, [LABEL_KIND]: kind, ...(isPreviewId(sessionId) ? { [LABEL_PREVIEW]: 'true' } : {}) };
}

/**
 * A Docker-safe name part for a session id. Ids like `ses_<base32>` pass
 * through (lower-cased); anything that had to be changed, or is long, gets a
 * hash suffix so two different ids can never share a container.
 */
export function sessionSlug(sessionId: string): string {
  if (sessionId === '') throw new Error('session id must not be empty');
  const cleaned = sessionId.toLowerCase().replace(/[^a-z0-9_.-]/g, '-').slice(0, 64);
  if (cleaned === sessionId && /^[a-z0-9]/.test(cleaned)) return cleaned;
  const hash = createHash('sha256').update(sessionId).digest('hex').slice(0, 12);
  return `${cleaned}-${hash}`.replace(/^[^a-z0-9]+/, '');
}

export const containerName = (prefix: string, sessionId: string) => `${prefix}${sessionSlug(sessionId)}`;
export const volumeName = (prefix: string, sessionId: string) => `${prefix}${sessionSlug(sessionId)}-ws`;
