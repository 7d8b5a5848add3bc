// Idle sessions are paused (cgroup freezer) and unpaused by their next use;
// nothing written before a pause or a stop is lost (services/sandbox/idle-pause.ts).
// Every case runs both ways of freezing (frozen-container.ts): the cgroup's
// freezer written directly (`auto`, the default here) and `docker pause`.
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { containerName, type PauseListener, type Sandbox, type SandboxManager, type SandboxOptions } from '../../../services/sandbox/index.ts';
import { frozenNow, type PauseWith } from '../../../services/sandbox/frozen-container.ts';
import { withSessionLock } from '../../../services/sandbox/session-lock.ts';
import { bash, cmd, docker, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

// A prefix per test: the reapers of one test judge no other test's containers.
const made: { prefix: string; managers: SandboxManager[] }[] = [];

beforeAll(() => requireImage());
afterAll(async () => {
  for (const { prefix, managers } of made) {
    for (const m of managers.slice(1)) await m.close();
    await reapAll(managers[0]!, prefix);
  }
});

/** The way of freezing of the describe block running now. */
let mode: PauseWith = 'auto';

/** A manager on a prefix of its own (or `prefix`'s: another process of the same deployment). */
function manager(options: SandboxOptions & { onPause?: PauseListener }, prefix?: string): SandboxManager {
  let set = made.find((s) => s.prefix === prefix);
  if (!set) made.push((set = { prefix: testPrefix('pause'), managers: [] }));
  const m = newManager(set.prefix, { pauseWith: mode, ...options });
  set.managers.push(m);
  return m;
}
const inspect = (m: SandboxManager, sid: string) => docker.getContainer(containerName(m.options.namePrefix, sid)).inspect();
const state = async (m: SandboxManager, sid: string) => (await inspect(m, sid)).State;
/** Frozen either way: Docker's flag, or the cgroup's freezer (which Docker does not see). */
const frozen = async (m: SandboxManager, sid: string) => frozenNow(await inspect(m, sid));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitPaused(m: SandboxManager, sid: string, withinMs: number): Promise<void> {
  const until = Date.now() + withinMs;
  while (!(await frozen(m, sid))) {
    if (Date.now() > until) throw new Error(`container of ${sid} not paused within ${withinMs} ms`);
    await sleep(25);
  }
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

const read = (sb: Sandbox, path: string) => sb.execute(cmd({ tool: 'read', path }));

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('latin1');
}

const unpauseSpy = (m: SandboxManager, sid: string) =>
  vi.spyOn(Object.getPrototypeOf(docker.getContainer(containerName(m.options.namePrefix, sid))) as { unpause: () => Promise<unknown> }, 'unpause');

describe.each(['auto', 'docker'] as const)('idle pause (pauseWith %s)', (pauseWith) => {
  beforeAll(() => { mode = pauseWith; });

  it(pauseWith === 'auto' ? "freezes through the cgroup, unseen by Docker (its flag stays false), and thaws without a Docker call" : 'freezes through `docker pause` (Docker\'s flag set)', async () => {
    const m = manager({ idlePauseMs: 60_000 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    expect(await sb.execute(cmd({ tool: 'write', path: 'f.txt', content: 'frozen' }))).toMatchObject({ ok: true });
    expect(await m.pause(sid)).toBe(true);
    expect(await frozen(m, sid)).toBe(true);
    expect((await state(m, sid)).Paused).toBe(pauseWith === 'docker');
    const unpause = unpauseSpy(m, sid);
    try {
      expect(await read(sb, 'f.txt')).toMatchObject({ ok: true, stdout: 'frozen' });
      expect(unpause).toHaveBeenCalledTimes(pauseWith === 'docker' ? 1 : 0);
    } finally {
      unpause.mockRestore();
    }
    expect(await frozen(m, sid)).toBe(false);
  });

  it('pauses a container idle past idlePauseMs and thaws it on the next command, files intact', async () => {
    const m = manager({ idlePauseMs: 300 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    expect(await sb.execute(cmd({ tool: 'write', path: 'kept.txt', content: 'before the pause' }))).toMatchObject({ ok: true });
    expect(await bash(sb, 'echo tmp-kept > /tmp/t.txt')).toMatchObject({ ok: true });
    const running = [];
    for (let i = 0; i < 5; i++) running.push((await timed(() => read(sb, 'kept.txt'))).ms);
    await waitPaused(m, sid, 3_000);
    expect(m.pausedCount).toBe(1);
    const first = await timed(() => read(sb, 'kept.txt'));
    expect(first.value).toMatchObject({ ok: true, stdout: 'before the pause' });
    expect(await state(m, sid)).toMatchObject({ Running: true, Paused: false });
    expect(await frozen(m, sid)).toBe(false);
    expect(m.pausedCount).toBe(0);
    expect(await bash(sb, 'cat /tmp/t.txt')).toMatchObject({ ok: true, stdout: 'tmp-kept\n' });
    const base = running.sort((a, b) => a - b)[2]!;
    console.log(`first command after a pause: ${first.ms.toFixed(1)} ms, on a running container (median of 5): ${base.toFixed(1)} ms, added ${(first.ms - base).toFixed(1)} ms`);
    expect(first.ms - base).toBeLessThan(500);
  });

  it('thaws a paused container for a `docker exec` of the workspace out (archive)', async () => {
    const m = manager({ idlePauseMs: 200 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'in-archive.txt', content: 'archived' }));
    await waitPaused(m, sid, 3_000);
    const tar = await text(await m.workspace.archive(sid, 'tar'));
    expect(tar).toContain('in-archive.txt');
    expect(tar).toContain('archived');
  });

  it('concurrent uses of a paused container share one unpause', async () => {
    const thaws: boolean[] = [];
    const m = manager({ idlePauseMs: 60_000, onPause: (_s, paused) => { if (!paused) thaws.push(paused); } });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'x.txt', content: 'x' }));
    expect(await m.pause(sid)).toBe(true);
    expect((await frozen(m, sid))).toBe(true);
    thaws.length = 0;
    const unpause = unpauseSpy(m, sid);
    const dockerCalls = pauseWith === 'docker' ? 1 : 0;
    try {
      const results = await Promise.all([read(sb, 'x.txt'), read(sb, 'x.txt'), sb.readPath('x.txt'), bash(sb, 'true')]);
      expect(results.map((r) => ('ok' in r ? r.ok : r.kind))).toEqual([true, true, 'file', true]);
      expect(thaws).toHaveLength(1);
      expect(unpause).toHaveBeenCalledTimes(dockerCalls);
      // Thawed is thawed: later uses take the fast path again.
      expect(await read(sb, 'x.txt')).toMatchObject({ ok: true });
      expect(thaws).toHaveLength(1);
      expect(unpause).toHaveBeenCalledTimes(dockerCalls);
    } finally {
      unpause.mockRestore();
    }
  });

  it('prewake thaws a container this manager paused before any command reaches it; the listener hears both', async () => {
    const heard: [string, boolean][] = [];
    const m = manager({ idlePauseMs: 60_000, onPause: (s, paused) => heard.push([s, paused]) });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'w.txt', content: 'woken' }));
    expect(heard).toEqual([[sid, false]]); // the open: no pause holds
    expect(await m.pause(sid)).toBe(true);
    expect(heard.at(-1)).toEqual([sid, true]);
    m.prewake(sid);
    m.prewake('ses_unknown'); // nothing held here: nothing done
    const until = Date.now() + 3_000;
    while ((await frozen(m, sid)) && Date.now() < until) await sleep(5);
    expect((await frozen(m, sid))).toBe(false);
    expect(m.pausedCount).toBe(0);
    expect(heard.at(-1)).toEqual([sid, false]);
    // Thawed ahead: the command takes the running path (no unpause of its own).
    const unpause = unpauseSpy(m, sid);
    const thawsBefore = heard.filter(([, p]) => !p).length;
    try {
      expect(await read(sb, 'w.txt')).toMatchObject({ ok: true, stdout: 'woken' });
      expect(unpause).not.toHaveBeenCalled();
      expect(heard.filter(([, p]) => !p)).toHaveLength(thawsBefore);
    } finally {
      unpause.mockRestore();
    }
    // Running: a prewake does nothing (no Docker call, nothing told).
    const told = heard.length;
    m.prewake(sid);
    await sleep(100);
    expect(heard.length).toBe(told);
  });

  it('a prewake queued behind a remove never makes the removed session a container again (attack: a wake racing DELETE)', async () => {
    const heard: boolean[] = [];
    const m = manager({ idlePauseMs: 60_000, onPause: (_s, paused) => heard.push(paused) });
    const sid = sessionId();
    const name = containerName(m.options.namePrefix, sid);
    await (await m.sandboxFor(sid)).execute(cmd({ tool: 'write', path: 'a.txt', content: 'x' }));
    expect(await m.pause(sid)).toBe(true);
    let release!: () => void;
    const held = withSessionLock(name, () => new Promise<void>((r) => { release = r; })); // the reaper, a stop: something holds the lock
    const removed = m.remove(sid);
    await sleep(50);
    m.prewake(sid); // a request read the mark just before the delete
    release();
    await held;
    await removed;
    await sleep(1_000);
    expect(await docker.listContainers({ all: true, filters: { name: [name] } })).toEqual([]);
    expect(heard.at(-1)).toBe(false); // the mark of what was removed is cleared
  });

  it('pause(sid) does not pause while a command is in flight, and does once it is done', async () => {
    const m = manager({ idlePauseMs: 60_000 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    const busy = bash(sb, 'sleep 1; echo done');
    await sleep(200);
    expect(await m.pause(sid)).toBe(false);
    expect((await frozen(m, sid))).toBe(false);
    expect(await busy).toMatchObject({ ok: true, stdout: 'done\n' });
    expect(await m.pause(sid)).toBe(true);
    expect((await frozen(m, sid))).toBe(true);
    expect(await bash(sb, 'echo again')).toMatchObject({ ok: true, stdout: 'again\n' });
    expect((await frozen(m, sid))).toBe(false);
  });

  it('idlePauseMs 0 never pauses, neither the sweep nor pause(sid)', async () => {
    const m = manager({ idlePauseMs: 0 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await bash(sb, 'true');
    await sleep(800);
    expect(await m.pause(sid)).toBe(false);
    expect((await frozen(m, sid))).toBe(false);
  });

  it('a container left paused by a process that died answers the next manager', async () => {
    const dead = manager({ idlePauseMs: 3_600_000 });
    const sid = sessionId();
    await (await dead.sandboxFor(sid)).execute(cmd({ tool: 'write', path: 'left.txt', content: 'left behind' }));
    expect(await dead.pause(sid)).toBe(true);
    // No close(): the process "died". The next one would wait out the ping (5 s here) on a frozen executor.
    const next = manager({ startTimeoutMs: 5_000 }, dead.options.namePrefix);
    await next.start(); // its start-up reap keeps the paused container (idle since its last mark, not since its start)
    expect((await frozen(next, sid))).toBe(true);
    const sb = await next.sandboxFor(sid);
    expect(await read(sb, 'left.txt')).toMatchObject({ ok: true, stdout: 'left behind' });
    expect(await state(next, sid)).toMatchObject({ Running: true, Paused: false });
    expect(await frozen(next, sid)).toBe(false);
  });

  it('the reaper stops a paused container past idleStopMs; the next command recreates it, files intact', async () => {
    const m = manager({ idlePauseMs: 200, idleStopMs: 1_000 });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'kept.txt', content: 'kept across a stop' }));
    await waitPaused(m, sid, 3_000);
    expect(await m.reap()).toMatchObject({ stoppedContainers: 0 });
    await sleep(1_000);
    // Thawed first, the executor takes the SIGTERM at once (frozen, it would wait for the SIGKILL 2 s later).
    const stop = await timed(() => m.reap());
    expect(stop.value).toEqual({ removedContainers: 0, removedVolumes: 0, stoppedContainers: 1, removedImages: 0, failed: 0 });
    expect(stop.ms).toBeLessThan(1_500);
    const gone = await docker.getContainer(containerName(m.options.namePrefix, sid)).inspect().then((i) => i.State.Running, () => false);
    expect(gone).toBe(false);
    expect(await read(sb, 'kept.txt')).toMatchObject({ ok: true, stdout: 'kept across a stop' });
    expect(await state(m, sid)).toMatchObject({ Running: true, Paused: false });
    expect(await frozen(m, sid)).toBe(false);
  });

  it('a stop of a paused container (a plain volume: `docker stop`) thaws it first, so the executor ends at its SIGTERM', async () => {
    const m = manager({ idlePauseMs: 60_000, workspaceFs: 'watchdog' });
    const sid = sessionId();
    const sb = await m.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'kept.txt', content: 'kept' }));
    expect(await m.pause(sid)).toBe(true);
    const stop = await timed(() => m.stop(sid));
    expect(stop.ms).toBeLessThan(1_500); // frozen, its SIGTERM would wait for the SIGKILL 2 s later
    expect((await state(m, sid)).Running).toBe(false);
    expect(await read(sb, 'kept.txt')).toMatchObject({ ok: true, stdout: 'kept' });
  });

  it("another process's reaper counts a paused container idle since its pause, not since its start", async () => {
    const owner = manager({ idlePauseMs: 300 });
    const sid = sessionId();
    const sb = await owner.sandboxFor(sid);
    await sleep(1_600); // started well over the other reaper's idleStopMs ago
    await sb.execute(cmd({ tool: 'write', path: 'late.txt', content: 'written late' }));
    await waitPaused(owner, sid, 3_000);
    const other = manager({ idleStopMs: 1_500, idlePauseMs: 0 }, owner.options.namePrefix);
    // Its executor is not asked (frozen, it would time the 2 s probe out): the pause's mark says when it was last used.
    const judged = await timed(() => other.reap());
    expect(judged.value).toMatchObject({ stoppedContainers: 0, failed: 0 });
    expect(judged.ms).toBeLessThan(1_500);
    expect((await frozen(owner, sid))).toBe(true);
    await sleep(1_600);
    expect(await other.reap()).toMatchObject({ stoppedContainers: 1, failed: 0 });
    // The owner's client died with the container: its next command opens it again on the same workspace.
    expect(await read(sb, 'late.txt')).toMatchObject({ ok: true, stdout: 'written late' });
  });

  it('another process that used the session once never pauses it under the one running its commands (the executor is asked)', async () => {
    // Two workers on one engine: B served a read once, A runs the session's commands; B's sweep judges B's entry idle.
    const a = manager({ idlePauseMs: 60_000 });
    const b = manager({ idlePauseMs: 400 }, a.options.namePrefix);
    const sid = sessionId();
    const sa = await a.sandboxFor(sid);
    expect(await sa.execute(cmd({ tool: 'write', path: 'f.txt', content: 'x' }))).toMatchObject({ ok: true });
    expect(await (await b.sandboxFor(sid)).readPath('f.txt')).toMatchObject({ kind: 'file' });
    expect(await bash(sa, 'echo kept > /tmp/keep')).toMatchObject({ ok: true });
    // A command longer than B's idle time, then more use: B's sweep runs a dozen times meanwhile.
    expect(await bash(sa, 'for i in 1 2 3; do sleep 0.5; done; echo done')).toMatchObject({ ok: true, stdout: 'done\n' });
    for (let i = 0; i < 4; i++) {
      expect(await sa.execute(cmd({ tool: 'append', path: 'f.txt', content: String(i) }))).toMatchObject({ ok: true });
      expect((await frozen(a, sid))).toBe(false);
      await sleep(200);
    }
    expect(await bash(sa, 'cat /tmp/keep')).toMatchObject({ ok: true, stdout: 'kept\n' }); // the same container throughout
    // Once the session is really idle (for the executor too), B pauses it, and A's next use thaws it.
    await waitPaused(b, sid, 5_000);
    expect(await read(sa, 'f.txt')).toMatchObject({ ok: true, stdout: 'x0123' });
  });
});
