import { rm } from 'node:fs/promises';
import { detachLoop } from './host-tools.ts';
import { sessionSlug } from './names.ts';
import type { WorkspaceImages } from './workspace-fs.ts';

// The reaper's pass over workspace images: a stopped session has neither
// container nor volume, only its image, so images are judged on their own.

export type ImageReapOptions = {
  images: Pick<WorkspaceImages, 'list' | 'destroyFile' | 'staleTemporaries' | 'orphanLoops' | 'staleSpares' | 'destroySpare'>;
  /** Last use this process knows of the session with this name slug. */
  lastUsedBySlug: (slug: string) => number | undefined;
};

type Pass = {
  idleTtlMs: number; liveSessions?: Set<string>; keep: Set<string>; dropped: Set<string>; now: number;
  exclusive?: (slug: string, fn: () => Promise<void>) => Promise<void>;
};
type Counts = { removedImages: number };
type Attempt = (session: string, what: string, fn: () => Promise<void>) => Promise<void>;

// A copy takes milliseconds: one this old was left by a crash mid-copy.
const STALE_TEMPORARY_MS = 10 * 60_000;

export async function reapImages(o: ImageReapOptions, pass: Pass, result: Counts, attempt: Attempt): Promise<void> {
  const live = pass.liveSessions && new Set([...pass.liveSessions].map(sessionSlug));
  const keep = new Set([...pass.keep].filter(Boolean).map(sessionSlug));
  const dropped = new Set([...pass.dropped].filter(Boolean).map(sessionSlug));
  for (const img of await o.images.list()) {
    if (keep.has(img.slug)) continue;
    // Judged under the session's lock: a connect that started since the pass did counts as use.
    const judgeAndDestroy = async () => {
      const used = o.lastUsedBySlug(img.slug);
      // Writes through the loop device move the mtime late (at writeback): a
      // session whose container the pass judged idle or gone goes regardless, unless used since.
      const gone = (dropped.has(img.slug) && !(used !== undefined && used > pass.now)) || (live !== undefined && !live.has(img.slug));
      // The image's mtime is set when its session stops (and by its creation).
      const last = Math.max(img.mtimeMs, used ?? 0);
      if (!gone && pass.now - last <= pass.idleTtlMs) return;
      await o.images.destroyFile(img.file);
      result.removedImages++;
    };
    await attempt('', `workspace image ${img.file}`, () => (pass.exclusive ? pass.exclusive(img.slug, judgeAndDestroy) : judgeAndDestroy()));
  }
  for (const file of await o.images.staleTemporaries(STALE_TEMPORARY_MS, pass.now)) {
    await attempt('', `half-made image ${file}`, () => rm(file, { force: true }));
  }
  // A live process takes its spares within minutes of a new session; one this old was left by a process gone.
  for (const file of await o.images.staleSpares(pass.idleTtlMs, pass.now)) {
    await attempt('', `spare image ${file}`, () => o.images.destroySpare(file));
  }
  for (const dev of await o.images.orphanLoops()) {
    await attempt('', `loop device ${dev} of an unlinked image`, () => detachLoop(dev));
  }
}
