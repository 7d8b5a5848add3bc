import type Docker from 'dockerode';
import { thawFound } from './frozen-container.ts';
import { LABEL_MANAGED, LABEL_SESSION, sessionSlug } from './names.ts';
import { sandboxLog } from './log.ts';
import type { EgressDirs } from './egress-dirs.ts';
import { reapEgressDirs } from './reap-egress.ts';
import { reapImages, type ImageReapOptions } from './reap-images.ts';

export type ReapOptions = {
  idleTtlMs: number;
  /** Running (or paused) containers idle longer than this are stopped (workspace and container kept; the next command starts it again). */
  idleStopMs?: number;
  /** Only containers and volumes whose names start with this are considered (one deployment, or one test run). */
  namePrefix: string;
  /** When given, every session not in it is gone and reaped whatever its age. */
  liveSessions?: Set<string>;
  /** Last use known to this process, if any. */
  lastUsed: (sessionId: string) => number | undefined;
  /** Last activity reported by a running container's executor, if it answers. */
  probe: (containerId: string) => Promise<number | undefined>;
  /** When this host last opened or paused the session's container (egress-dirs.ts `mark`): all a paused one can tell. */
  markedAt?: (sessionId: string) => Promise<number | undefined>;
  /** Called before a session's container is removed, to drop local state. */
  forget: (sessionId: string) => void;
  /** Stops an idle session (default: `docker stop`; with per-session filesystems the manager also detaches the image). */
  stop?: (sessionId: string, containerId: string) => Promise<void>;
  /**
   * Runs a session's judgement and clean-up under the lock its connects take
   * (keyed by name slug), so a connect never interleaves with them and one
   * that is waiting makes the session count as in use (`lastUsed`).
   */
  exclusive?: (slug: string, fn: () => Promise<void>) => Promise<void>;
  /** The workspace images, when each workspace is its own filesystem. */
  images?: ImageReapOptions;
  /** The sessions' egress directories, with the last use this process knows of a session by its name slug. */
  egress?: { dirs: Pick<EgressDirs, 'list' | 'removeDir'>; lastUsedBySlug: (slug: string) => number | undefined };
  now?: number;
};

/** `failed`: items a pass could not clean (each logged with its session); the next pass tries them again. */
export type ReapResult = { removedContainers: number; removedVolumes: number; stoppedContainers: number; removedImages: number; failed: number };

const managed = { label: [`${LABEL_MANAGED}=true`] };
const ignoreNotFound = (err: unknown) => {
  if ((err as { statusCode?: number }).statusCode !== 404) throw err;
};

/**
 * Removes the containers and volumes of sessions that are gone or idle past
 * the TTL. Works from Docker's state alone (labels and timestamps), so it
 * also cleans up after a crash of the process that created them.
 */
export async function reapSandboxes(docker: Docker, o: ReapOptions): Promise<ReapResult> {
  const now = o.now ?? Date.now();
  const result: ReapResult = { removedContainers: 0, removedVolumes: 0, stoppedContainers: 0, removedImages: 0, failed: 0 };
  // One session that cannot be cleaned (a stuck mount, a dockerd error) must not keep the others.
  const attempt = async (session: string, what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      result.failed++;
      sandboxLog(session || undefined).warn({ err }, `reaper: ${what} failed; the next pass tries again`);
    }
  };
  const locked = (session: string, fn: () => Promise<void>) => (session && o.exclusive ? o.exclusive(sessionSlug(session), fn) : fn());
  const keep = new Set<string>();
  const dropped = new Set<string>(); // sessions whose container went for good this pass: their images go too
  const containers = await docker.listContainers({ all: true, filters: managed });
  for (const c of containers) {
    if (!c.Names.some((n) => n.replace(/^\//, '').startsWith(o.namePrefix))) continue;
    const session = c.Labels[LABEL_SESSION] ?? '';
    await attempt(session, `container ${c.Id.slice(0, 12)}`, () => locked(session, async () => {
      const gone = o.liveSessions !== undefined && !o.liveSessions.has(session);
      const idleFor = gone ? Infinity : now - (await lastActive(docker, c, o));
      if (idleFor <= o.idleTtlMs) {
        keep.add(session);
        // An idle sandbox is not left running: a stopped one holds no memory
        // and no place under the key's cap of live containers.
        if ((c.State === 'running' || c.State === 'paused') && o.idleStopMs !== undefined && idleFor > o.idleStopMs) {
          o.forget(session);
          await (o.stop ? o.stop(session, c.Id) : stopContainer(docker, c.Id));
          result.stoppedContainers++;
        }
        return;
      }
      o.forget(session);
      await docker.getContainer(c.Id).remove({ force: true }).catch(ignoreNotFound);
      dropped.add(session);
      result.removedContainers++;
    }));
  }
  const { Volumes } = await docker.listVolumes({ filters: managed });
  for (const v of Volumes ?? []) {
    if (!v.Name.startsWith(o.namePrefix)) continue;
    const session = v.Labels?.[LABEL_SESSION] ?? '';
    if (keep.has(session)) continue;
    await attempt(session, `volume ${v.Name}`, () => locked(session, async () => {
      const gone = o.liveSessions !== undefined && !o.liveSessions.has(session);
      // A volume without a container is either being set up right now (fresh)
      // or was left by a crash; only the TTL tells them apart.
      const created = Date.parse((v as { CreatedAt?: string }).CreatedAt ?? '') || 0;
      const last = Math.max(created, o.lastUsed(session) ?? 0);
      if (!gone && now - last <= o.idleTtlMs) return;
      try {
        await docker.getVolume(v.Name).remove();
        result.removedVolumes++;
      } catch (err) {
        // 409: still in use by a container that appeared meanwhile; next round.
        const status = (err as { statusCode?: number }).statusCode;
        if (status !== 404 && status !== 409) throw err;
      }
    }));
  }
  if (o.images) await reapImages(o.images, { ...o, now, keep, dropped }, result, attempt);
  if (o.egress) {
    // After the image pass: a stopped session's image keeps its directory, a removed one no longer does.
    const imageSlugs = new Set(o.images ? (await o.images.images.list()).map((i) => i.slug) : []);
    await reapEgressDirs(o.egress.dirs, { ...o, now, keep, dropped, imageSlugs, lastUsedBySlug: o.egress.lastUsedBySlug }, attempt);
  }
  return result;
}

/**
 * The last use a manager knows of its sessions, by id and by name slug: now
 * while something is in flight or connecting (a paused session has neither).
 */
export function lastUses(entries: Map<string, { inflight: number; connecting?: unknown; lastUsed: number }>): {
  lastUsed: (sessionId: string) => number | undefined; lastUsedBySlug: (slug: string) => number | undefined;
} {
  const lastUsed = (s: string) => {
    const e = entries.get(s);
    return e && (e.inflight > 0 || e.connecting) ? Date.now() : e?.lastUsed;
  };
  const lastUsedBySlug = (slug: string) => {
    const sid = [...entries.keys()].find((k) => sessionSlug(k) === slug);
    return sid === undefined ? undefined : lastUsed(sid);
  };
  return { lastUsed, lastUsedBySlug };
}

/**
 * `docker stop` (2 s to end, then killed). Docker 20.10 thaws a container it
 * paused to deliver the signals; one whose freezer was written directly gets
 * its SIGTERM only when thawed (runc thaws it for the SIGKILL, 2 s later), so
 * it is thawed first.
 */
export async function stopContainer(docker: Docker, id: string): Promise<void> {
  const info = await docker.getContainer(id).inspect().catch((err: { statusCode?: number }) => {
    if (err.statusCode !== 404) throw err;
  });
  if (!info) return;
  // A thaw that fails (the container ended meanwhile) leaves the stop to Docker: its SIGKILL thaws what is frozen.
  await thawFound(docker, info, id).catch((err: unknown) => sandboxLog().debug({ err, container: id }, 'stop: thawing first failed'));
  await docker.getContainer(id).stop({ t: 2 }).catch((err: { statusCode?: number }) => {
    if (err.statusCode !== 304 && err.statusCode !== 404) throw err;
  });
}

async function lastActive(docker: Docker, c: Docker.ContainerInfo, o: ReapOptions): Promise<number> {
  const session = c.Labels[LABEL_SESSION] ?? '';
  const known = o.lastUsed(session);
  if (known !== undefined) return known;
  const created = c.Created * 1000;
  // A paused executor is not asked: frozen, it would only time the probe out.
  if (c.State === 'running') {
    const reported = await o.probe(c.Id);
    if (reported !== undefined) return Math.max(reported, created);
  }
  // A container removed meanwhile has no stamps: its creation time stands.
  const info = await docker.getContainer(c.Id).inspect().catch((err: unknown) => {
    sandboxLog().debug({ err, container: c.Id }, 'reaper: inspect failed');
    return null;
  });
  const stamps = [info?.State.StartedAt, info?.State.FinishedAt].map((s) => Date.parse(s ?? '') || 0);
  // A paused container counts as idle since its pause (the mark); Docker keeps no pause time.
  const marked = session && o.markedAt ? ((await o.markedAt(session)) ?? 0) : 0;
  return Math.max(created, marked, ...stamps);
}
