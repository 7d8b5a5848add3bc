import type { EgressDirs } from './egress-dirs.ts';
import { sessionSlug } from './names.ts';

// The reaper's pass over egress directories. A directory lives as long as
// its session's sandbox: a container (running or stopped) or, with a
// filesystem per workspace, the image of a stopped session. Removing one
// under a live proxy would leave that proxy listening on a name no container
// can see again, so the rule errs towards keeping.

type Pass = {
  idleTtlMs: number; liveSessions?: Set<string>; keep: Set<string>; dropped: Set<string>; now: number;
  exclusive?: (slug: string, fn: () => Promise<void>) => Promise<void>;
  /** Slugs whose workspace image is still there after the image pass. */
  imageSlugs: Set<string>;
  lastUsedBySlug: (slug: string) => number | undefined;
};
type Attempt = (session: string, what: string, fn: () => Promise<void>) => Promise<void>;

export async function reapEgressDirs(egress: Pick<EgressDirs, 'list' | 'removeDir'>, pass: Pass, attempt: Attempt): Promise<void> {
  const live = pass.liveSessions && new Set([...pass.liveSessions].map(sessionSlug));
  const keep = new Set([...pass.keep].filter(Boolean).map(sessionSlug));
  const dropped = new Set([...pass.dropped].filter(Boolean).map(sessionSlug));
  for (const d of await egress.list()) {
    if (keep.has(d.slug)) continue;
    const judgeAndRemove = async () => {
      const used = pass.lastUsedBySlug(d.slug);
      const gone = (dropped.has(d.slug) && !(used !== undefined && used > pass.now)) || (live !== undefined && !live.has(d.slug));
      if (!gone && pass.imageSlugs.has(d.slug)) return;
      // Neither container nor image: a session being set up (the directory comes first) or one long gone.
      if (!gone && pass.now - Math.max(d.mtimeMs, used ?? 0) <= pass.idleTtlMs) return;
      await egress.removeDir(d.dir);
    };
    await attempt('', `egress directory ${d.dir}`, () => (pass.exclusive ? pass.exclusive(d.slug, judgeAndRemove) : judgeAndRemove()));
  }
}
