import Docker from 'dockerode';
import { DockerSandbox } from './docker-sandbox.ts';
import { EgressDirs } from './egress-dirs.ts';
import type { ExecutorClient } from './executor-client.ts';
import { thawIfPaused } from './frozen-container.ts';
import { IdlePauses, type PausableEntry, type PauseListener } from './idle-pause.ts';
import { containerName } from './names.ts';
import { lastUses, reapSandboxes, stopContainer, type ReapResult } from './reaper.ts';
import { resolveSandboxOptions, type ResolvedSandboxOptions, type SandboxOptions } from './sandbox-options.ts';
import { connectOnImage, connectSession, probeActivity } from './session-container.ts';
import { withSessionLock } from './session-lock.ts';
import { StartSlots } from './start-slots.ts';
import type { Sandbox } from './types.ts';
import { sandboxLog, settled } from './log.ts';
import { periodic } from './periodic.ts';
import { teardownSession } from './teardown.ts';
import { WorkspaceImages } from './workspace-fs.ts';
import { workspaceImagesFor, type WorkspaceFsMode } from './workspace-mode.ts';
import { SandboxWorkspaceOut } from './workspace-out.ts';

type Entry = PausableEntry & { sandbox: DockerSandbox };
export type ManagerStatus = 'idle' | 'starting' | 'ready' | 'closing' | 'closed';

/**
 * One hardened container per session, found again by name after a restart.
 *
 * @example
 * const sandboxes = new SandboxManager();
 * const sb = await sandboxes.sandboxFor('ses_abc');
 * const r = await sb.execute({ id: '1', tool: 'bash', cmd: 'ls', need_result: false });
 * await sandboxes.close(); // containers stay for the next process
 */
export class SandboxManager {
  readonly options: ResolvedSandboxOptions;
  readonly #docker: Docker;
  readonly #entries = new Map<string, Entry>();
  #status: ManagerStatus = 'idle';
  #starting?: Promise<void>;
  #closing?: Promise<void>;
  #timer?: NodeJS.Timeout;
  #fs?: Promise<WorkspaceImages | null>;
  readonly #egress: EgressDirs;
  readonly #starts: StartSlots;
  readonly #pauses: IdlePauses;
  readonly #pauseListener?: PauseListener;
  /** Archives, baselines, change lists and patches of the sessions' workspaces, made in their containers. */
  readonly workspace = new SandboxWorkspaceOut(() => this.#docker, () => this.options.namePrefix, (sid) => this.sandboxFor(sid) as Promise<DockerSandbox>);

  /** `onPause`: told when this process freezes or thaws a session's container (idle-pause.ts PauseListener). */
  constructor(options: SandboxOptions & { docker?: Docker; onPause?: PauseListener } = {}) {
    const { docker, onPause, ...rest } = options;
    this.#docker = docker ?? new Docker();
    this.options = resolveSandboxOptions(rest);
    this.#egress = new EgressDirs({ dir: this.options.egressDir, namePrefix: this.options.namePrefix });
    this.#starts = new StartSlots(this.options.startConcurrency);
    this.#pauseListener = onPause;
    const pauseDeps = { docker: this.#docker, namePrefix: this.options.namePrefix, pauseWith: this.options.pauseWith, entry: (s: string) => this.#entries.get(s), mark: (s: string) => this.#egress.mark(s), changed: onPause };
    this.#pauses = new IdlePauses(pauseDeps, this.options.idlePauseMs);
  }

  /**
   * Where the session's egress proxy listens (a Unix socket the proxy makes):
   * the host side of /var/lib/thinkflow/egress/egress.sock in its container.
   * Pure; prepareEgress makes its directory.
   */
  egressSocketPath(sessionId: string): string { return this.#egress.socketPath(sessionId); }

  /** Makes the session's egress directory (0700, idempotent; also done before each container start) and returns egressSocketPath. */
  prepareEgress(sessionId: string): Promise<string> { return this.#egress.prepare(sessionId); }

  get status(): ManagerStatus { return this.#status; }

  /** How workspaces get their quota on this host (resolved once; `auto` warns when it falls back to the watchdog). */
  async workspaceMode(): Promise<WorkspaceFsMode> { return (await this.#images()) ? 'loop' : 'watchdog'; }

  /** Resolves when the spare workspace images being made are ready (benchmarks wait for an idle pool). */
  async sparesReady(): Promise<void> { await (await this.#images())?.sparesReady(); }

  /** The session's workspace image, when workspaces are filesystems of their own (tests and operators look at it). */
  async workspaceImage(sessionId: string): Promise<string | null> { return (await this.#images())?.imageOf(sessionId) ?? null; }

  /**
   * Reaps what a crashed predecessor left idle past the TTL, then reaps
   * periodically. Memoized; sandboxFor() calls it, so calling it is optional.
   */
  start(): Promise<void> {
    this.#starting ??= (async () => {
      this.#status = 'starting';
      (await this.#images())?.prepare();
      await this.reap();
      if (this.options.reapIntervalMs > 0) {
        this.#timer = periodic(this.options.reapIntervalMs, () => this.reap(), (err) => sandboxLog().warn({ err }, 'periodic reap failed; the next period tries again'));
      }
      this.#pauses.start(() => this.#entries.keys());
      if (this.#status === 'starting') this.#status = 'ready';
    })().catch((err: unknown) => {
      // Docker was down: let the next sandboxFor() try again instead of failing forever.
      this.#starting = undefined;
      if (this.#status === 'starting') this.#status = 'idle';
      throw err;
    });
    return this.#starting;
  }

  /** Creates or reuses the session's container and returns its sandbox, executor attached. */
  async sandboxFor(sessionId: string): Promise<Sandbox> {
    this.#assertOpen();
    await this.start();
    const entry = this.#entry(sessionId);
    await this.#connect(sessionId, entry);
    return entry.sandbox;
  }

  /**
   * Stops the session's sandbox, keeping its workspace for a later
   * sandboxFor(). With a filesystem per workspace the container and volume
   * go too and the image is detached: a volume names a loop device, and a
   * detached device number may be given to another session.
   */
  async stop(sessionId: string): Promise<void> {
    const images = await this.#images();
    return this.#exclusive(sessionId, async () => {
      this.#entries.get(sessionId)?.client?.close();
      if (images) return teardownSession(this.#docker, this.options.namePrefix, sessionId, images, true);
      await stopContainer(this.#docker, containerName(this.options.namePrefix, sessionId));
    });
  }

  /** Pauses the session's container unless this process has something in flight there (an approval wait); its next use unpauses it. True when paused now; never with idlePauseMs 0. */
  pause(sessionId: string): Promise<boolean> { return this.#pauses.pause(sessionId); }

  /**
   * A command is on its way (a request arrived, a model call started): a
   * container this process paused is thawed now, while the command is still
   * parsed, recorded and queued, instead of when it reaches the container.
   * Nothing when this process holds it running or not at all.
   */
  prewake(sessionId: string): void {
    if (this.#status === 'ready') this.#pauses.thawAhead(sessionId);
  }

  /** Containers this process holds paused (a gauge of the service's metrics). */
  get pausedCount(): number { return [...this.#entries.values()].filter((e) => e.paused).length; }

  /** Removes the session's container, volume and workspace image; fails (after trying every part) when one stays. */
  async remove(sessionId: string): Promise<void> {
    const images = await this.#images();
    return this.#exclusive(sessionId, async () => {
      this.#detach(sessionId);
      await teardownSession(this.#docker, this.options.namePrefix, sessionId, images, false, this.#egress);
    });
  }

  /** Removes containers, volumes and images of sessions not in `liveSessions` (when given) or idle past the TTL. */
  async reap(opts: { idleTtlMs?: number; liveSessions?: Set<string> } = {}): Promise<ReapResult> {
    const images = await this.#images();
    const { lastUsed, lastUsedBySlug } = lastUses(this.#entries);
    return reapSandboxes(this.#docker, {
      idleTtlMs: opts.idleTtlMs ?? this.options.idleTtlMs,
      idleStopMs: this.options.idleStopMs,
      namePrefix: this.options.namePrefix,
      liveSessions: opts.liveSessions,
      lastUsed,
      probe: (id) => probeActivity(this.#docker, id, this.options.maxFrameBytes),
      markedAt: (s) => this.#egress.markedAt(s),
      forget: (s) => this.#detach(s),
      exclusive: (slug, fn) => withSessionLock(`${this.options.namePrefix}${slug}`, fn),
      egress: { dirs: this.#egress, lastUsedBySlug },
      ...(images && {
        stop: (s: string) => teardownSession(this.#docker, this.options.namePrefix, s, images, true),
        images: { images, lastUsedBySlug },
      }),
    });
  }

  /** True when the Docker engine answers (for /readyz). */
  ping(): Promise<boolean> {
    return this.#docker.ping().then(() => true, (err: unknown) => { sandboxLog().warn({ err }, 'docker engine does not answer'); return false; });
  }

  /** Detaches from every container and stops the reaper; containers keep running. Memoized. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#status = 'closing';
      clearInterval(this.#timer);
      this.#pauses.stop();
      await this.#starting?.catch((err: unknown) => sandboxLog().debug({ err }, 'start had failed (reported to its caller)'));
      for (const [id, entry] of this.#entries) {
        await settled(entry.connecting, id, 'container start');
        this.#detach(id);
      }
      // Spare images are this process's; sessions' images stay for the next one.
      const images = await this.#fs?.catch((err: unknown) => void sandboxLog().debug({ err }, 'workspace mode had failed (reported to its caller)'));
      await images?.close();
      this.#status = 'closed';
    })();
    return this.#closing;
  }

  #entry(sessionId: string): Entry {
    let entry = this.#entries.get(sessionId);
    if (!entry) {
      const e: Entry = { lastUsed: Date.now(), inflight: 0 } as Entry;
      // Looked up again on every use: a Sandbox held across a remove() or a
      // reap gets a fresh container instead of a dead handle.
      e.sandbox = new DockerSandbox(
        sessionId,
        {
          connect: () => this.#connect(sessionId, this.#entry(sessionId)),
          touch: (delta) => {
            const current = this.#entries.get(sessionId) ?? e;
            current.lastUsed = Date.now();
            current.inflight = Math.max(0, current.inflight + delta);
          },
          recover: () => this.#recover(sessionId),
          thaw: async () => { if (await thawIfPaused(this.#docker, containerName(this.options.namePrefix, sessionId), sessionId)) this.#pauseListener?.(sessionId, false); },
          docker: this.#docker,
        },
        this.options,
      );
      this.#entries.set(sessionId, e);
      entry = e;
    }
    entry.lastUsed = Date.now();
    return entry;
  }

  // One connection attempt at a time per session; a dead client (container
  // stopped, executor killed) is replaced on the next use, and a paused
  // container is unpaused first (concurrent uses share the one unpause).
  #connect(sessionId: string, entry: Entry): Promise<ExecutorClient> {
    if (entry.client?.alive && !entry.paused) return Promise.resolve(entry.client);
    if (this.#status === 'closing' || this.#status === 'closed') {
      return Promise.reject(new Error('sandbox manager is closed'));
    }
    entry.connecting ??= this.#exclusive(sessionId, async () => {
      if (entry.client?.alive && (await this.#pauses.resume(sessionId, entry))) return entry.client;
      entry.paused = false; // a container still frozen is thawed by connectSession
      entry.frozen = undefined;
      const client = await this.#starts.run(() => this.#open(sessionId));
      // Opened (started, or found and thawed if a process that died had paused it): no pause of this session holds now.
      this.#pauseListener?.(sessionId, false);
      entry.client = client;
      if (this.#entries.get(sessionId) !== entry) client.close(); // removed meanwhile
      return client;
    })
      .finally(() => {
        entry.connecting = undefined;
      });
    return entry.connecting;
  }

  async #open(sessionId: string): Promise<ExecutorClient> {
    // A bind mount's source must exist when the container is created and each time it starts.
    await this.#egress.prepare(sessionId);
    const images = await this.#images();
    if (!images) return connectSession(this.#docker, sessionId, this.options);
    try {
      return await connectOnImage(this.#docker, sessionId, this.options, images);
    } finally {
      // Spares are made once the session is up and its first commands ran, not while it waits for them.
      images.prepare(true);
    }
  }

  // Opening and tearing down one session never interleave (session-lock.ts); never nested for one session.
  #exclusive<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    return withSessionLock(containerName(this.options.namePrefix, sessionId), fn);
  }

  #images(): Promise<WorkspaceImages | null> {
    this.#fs ??= workspaceImagesFor(this.options, this.#docker);
    return this.#fs;
  }

  // The executor misbehaved or stopped answering: its container is removed
  // (not just restarted), so the next command starts in a fresh one on the
  // same workspace volume.
  async #recover(sessionId: string): Promise<void> {
    return this.#exclusive(sessionId, async () => {
      this.#entries.get(sessionId)?.client?.close();
      await this.#docker.getContainer(containerName(this.options.namePrefix, sessionId)).remove({ force: true }).catch(notFoundOk);
    });
  }

  // Removed, reaped or let go at close: a pause mark of this process's would outlive what it marks.
  #detach(sessionId: string): void {
    const entry = this.#entries.get(sessionId);
    this.#entries.delete(sessionId);
    entry?.client?.close();
    if (entry?.paused) this.#pauseListener?.(sessionId, false);
  }

  #assertOpen(): void {
    if (this.#status === 'closing' || this.#status === 'closed') throw new Error('sandbox manager is closed');
  }
}

const notFoundOk = (err: { statusCode?: number }): void => { if (err.statusCode !== 404) throw err; };
