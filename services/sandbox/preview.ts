import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { access } from 'node:fs/promises';
import type { Command } from '../protocol/index.ts';
import { sandboxLog } from './log.ts';
import { containerName, LABEL_PREVIEW, LABEL_SESSION, PREVIEW_ID_PREFIX, volumeName } from './names.ts';
import { copyInto, PreviewRefused } from './preview-copy.ts';
import { fileDiffs, readBounded } from './preview-diff.ts';
import { resolvePreviewOptions, type PreviewOptions, type ResolvedPreviewOptions } from './preview-options.ts';
import type { DockerSandbox } from './docker-sandbox.ts';
import type { SandboxManager } from './sandbox-manager.ts';
import type { ExecutionResult } from './types.ts';
import type { ChangeKind } from './workspace-out.ts';

// A preview (issue 24): a pending command run in a throwaway sandbox on a
// copy of its session's workspace, then thrown away. The throwaway sandbox
// is a session of the manager's own with a fresh `preview_…` id, so it is
// made by the same code as every sandbox (toContainerSpec: network none, the
// session's CPU, memory, pids, output caps and quota; a filesystem of its own
// where the host has them) and run through the same executor path; it has no
// egress proxy, so even the relay reaches nothing. The real workspace is only
// read (its archive). Bounds: the copy (`maxWorkspaceBytes`), the command's
// time (`maxRunMs`), the whole preview (`maxRunMs + setupMs`: past it every
// wait is given up and the sandbox removed, which ends what runs in it),
// `perProcess` at once. Whatever happens, `finally` removes the container,
// volume, loop device and image; what a crashed process left is removed by
// the next preview's sweep once older than the whole bound.

export type PreviewChange = { path: string; change: ChangeKind; bytes: number; diff?: string; diff_truncated?: boolean };
export type PreviewRun = {
  result: ExecutionResult;
  /** the command's timeout as run: its own, capped at `maxRunMs` */
  run_limit_ms: number;
  changes: PreviewChange[];
  /** more paths changed than listed (`maxChanges`) */
  changes_truncated: boolean;
  copied_bytes: number;
  duration_ms: number;
};

export { PreviewRefused };

export class SandboxPreviews {
  readonly options: ResolvedPreviewOptions;
  readonly #manager: SandboxManager;
  readonly #docker: Docker;
  #running = 0;

  constructor(manager: SandboxManager, o: PreviewOptions & { docker?: Docker } = {}) {
    const { docker, ...rest } = o;
    this.#manager = manager;
    this.#docker = docker ?? new Docker();
    this.options = resolvePreviewOptions(rest);
  }

  /** Runs `command` on a copy of the session's workspace. @throws PreviewRefused (not possible, or past its bound); infrastructure errors as they came */
  async run(sessionId: string, command: Command, signal?: AbortSignal): Promise<PreviewRun> {
    const o = this.options;
    if (o.perProcess === 0) throw new PreviewRefused('previews_busy', 'previews are off on this worker (THINKFLOW_PREVIEWS_PER_WORKER=0)');
    if (this.#running >= o.perProcess) {
      throw new PreviewRefused('previews_busy', `this worker runs ${this.#running} previews already (THINKFLOW_PREVIEWS_PER_WORKER=${o.perProcess}); try again in a moment`);
    }
    this.#running++;
    const pid = `${PREVIEW_ID_PREFIX}${randomBytes(8).toString('hex')}`;
    const bound = o.maxRunMs + o.setupMs;
    // A timer of our own, not AbortSignal.timeout: inside AbortSignal.any, Node 20 may collect a timeout signal
    // before it fires (nodejs/node#57736), and the preview then ran past its bound (seen in CI).
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), bound);
    const stop = AbortSignal.any([deadline.signal, ...(signal ? [signal] : [])]);
    const log = sandboxLog(sessionId).child({ preview: pid });
    const t0 = performance.now();
    let steps: Promise<unknown> = Promise.resolve();
    const remove = () => this.#manager.remove(pid).catch((err: unknown) => log.error({ err }, 'preview: its sandbox was not fully removed; the next preview\'s sweep tries again'));
    try {
      await this.#sweep();
      const running = this.#steps(sessionId, pid, command, stop);
      steps = running;
      const run = await within(running, stop, bound);
      log.info({ tool: command.tool, copied_bytes: run.copied_bytes, changes: run.changes.length, ms: Math.round(performance.now() - t0) }, 'preview done');
      return { ...run, duration_ms: Math.round(performance.now() - t0) };
    } finally {
      clearTimeout(timer);
      this.#running--;
      await remove();
      // Past the bound a step may still be in flight and open the sandbox again (a connect waits for the removal's lock): once it settles, once more.
      if (stop.aborted) void steps.catch(() => undefined).then(remove);
    }
  }

  async #steps(sessionId: string, pid: string, command: Command, stop: AbortSignal): Promise<Omit<PreviewRun, 'duration_ms'>> {
    const sandbox = (await this.#manager.sandboxFor(pid)) as DockerSandbox;
    // In use throughout: the idle pause must not freeze it between steps (a long copy is a `docker exec`, not a command).
    const release = sandbox.hold();
    try {
      return await this.#inHeld(sessionId, pid, sandbox, command, stop);
    } finally {
      release();
    }
  }

  async #inHeld(sessionId: string, pid: string, sandbox: DockerSandbox, command: Command, stop: AbortSignal): Promise<Omit<PreviewRun, 'duration_ms'>> {
    const o = this.options;
    const m = this.#manager;
    // The archive opens the session's sandbox: asked first whether it has a workspace at all. One that has
    // none (never opened, or deleted while the preview was on its way) is previewed as the empty workspace
    // it is, and gets no new sandbox that nobody would remove.
    const container = this.#docker.getContainer(containerName(m.options.namePrefix, pid));
    const copied = (await this.#hasWorkspace(sessionId))
      ? await copyInto(this.#docker, container, await m.workspace.archive(sessionId, 'tar'), { options: m.options, limitBytes: o.maxWorkspaceBytes, signal: stop })
      : 0;
    // The copy as it starts is what the changes are counted from.
    await m.workspace.setBaseline(pid);
    stop.throwIfAborted();
    const ownMs = command.timeout !== undefined ? command.timeout * 1000 : m.options.bashTimeoutMs;
    const limitMs = Math.min(ownMs, m.options.maxBashTimeoutMs, o.maxRunMs);
    const bounded: Command = command.tool === 'bash' ? { ...command, timeout: Math.max(1, Math.floor(limitMs / 1000)) } : command;
    const result = await sandbox.execute(bounded, { signal: stop });
    stop.throwIfAborted(); // nothing more opens the sandbox once the preview was given up
    const { changes } = await m.workspace.changes(pid);
    const listed = changes.slice(0, o.maxChanges);
    const { text, cut } = listed.length > 0 ? await readBounded(await m.workspace.patch(pid), o.patchBytes) : { text: '', cut: false };
    const diffs = fileDiffs(text, listed.map((c) => c.path), o.fileDiffBytes, cut);
    return {
      result: boundOutput(result, o.outputBytes),
      run_limit_ms: command.tool === 'bash' ? Math.max(1, Math.floor(limitMs / 1000)) * 1000 : m.options.requestTimeoutMs,
      changes: listed.map((c) => {
        const d = diffs.get(c.path);
        return { ...c, ...(d ? { diff: d.diff, ...(d.truncated ? { diff_truncated: true } : {}) } : {}) };
      }),
      changes_truncated: changes.length > listed.length,
      copied_bytes: copied,
    };
  }

  /** Whether the session's workspace is on this host (its volume, or its image when stopped), without opening anything. */
  async #hasWorkspace(sessionId: string): Promise<boolean> {
    const m = this.#manager;
    const volume = await this.#docker.getVolume(volumeName(m.options.namePrefix, sessionId)).inspect().then(() => true, (err: { statusCode?: number }) => {
      if (err.statusCode === 404) return false;
      throw err;
    });
    if (volume) return true;
    const image = await m.workspaceImage(sessionId);
    return image !== null && (await access(image).then(() => true, () => false));
  }

  /** Removes preview sandboxes older than the whole bound (a process that died mid-preview left them). */
  async #sweep(): Promise<void> {
    const oldest = Date.now() - (this.options.maxRunMs + this.options.setupMs) - 60_000;
    const filters = { label: [`${LABEL_PREVIEW}=true`] };
    const [containers, { Volumes }] = await Promise.all([this.#docker.listContainers({ all: true, filters }), this.#docker.listVolumes({ filters })]);
    const stale = new Set<string>();
    for (const c of containers) if (c.Created * 1000 < oldest) stale.add(c.Labels[LABEL_SESSION] ?? '');
    for (const v of Volumes ?? []) {
      const created = Date.parse((v as { CreatedAt?: string }).CreatedAt ?? '') || 0;
      if (created < oldest) stale.add(v.Labels?.[LABEL_SESSION] ?? '');
    }
    for (const sid of stale) {
      if (!sid.startsWith(PREVIEW_ID_PREFIX)) continue;
      await this.#manager.remove(sid).catch((err: unknown) => sandboxLog(sid).warn({ err }, 'preview sweep: a stale preview sandbox was not removed; the next sweep tries again'));
    }
  }
}

/** `p`, or PreviewRefused `preview_timeout` once `stop` fires (the caller's finally then removes what still runs). */
function within<T>(p: Promise<T>, stop: AbortSignal, boundMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onStop = () => reject(new PreviewRefused('preview_timeout', `the preview did not finish within its bound of ${Math.round(boundMs / 1000)} s; it was stopped`));
    if (stop.aborted) return onStop();
    stop.addEventListener('abort', onStop, { once: true });
    p.then(resolve, reject).finally(() => stop.removeEventListener('abort', onStop));
  });
}

function boundOutput(r: ExecutionResult, max: number): ExecutionResult {
  const cut = (s: string | undefined) => (s !== undefined && s.length > max ? s.slice(0, max) : s);
  return {
    ...r,
    ...(r.stdout !== undefined ? { stdout: cut(r.stdout), stdout_truncated: r.stdout_truncated || r.stdout.length > max } : {}),
    ...(r.stderr !== undefined ? { stderr: cut(r.stderr), stderr_truncated: r.stderr_truncated || r.stderr.length > max } : {}),
  };
}
