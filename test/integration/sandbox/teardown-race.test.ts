// A connect that starts while the session is being stopped (issue 18,
// attacker review): stop removed the container and volume, then detached the
// loop device; a connect in between found the old /dev/loopN attached
// (losetup -j), the detach freed that number, another session's image took
// it, and dockerd mounted that other session's filesystem as this session's
// workspace. The docker client below holds the teardown between volume
// removal and detach, and the connect just before it creates the volume, so
// the interleaving happens on every run unless the manager prevents it.
import Docker from 'dockerode';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxManager, volumeName } from '../../../services/sandbox/index.ts';
import { bash, IMAGE, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('trace');
const reapPrefix = testPrefix('trace-reap');
const IDLE_STOP_MS = 300;
const real = new Docker();
const gated = new Docker();
let manager: SandboxManager;
let reaping: SandboxManager;

/** A point where a Docker call waits: `reached` once it gets there, it goes on at `release()`. */
type Gate = { reached: Promise<void>; arrive: () => Promise<void>; release: () => void };
function gate(): Gate {
  let signal!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (signal = r));
  const open = new Promise<void>((r) => (release = r));
  return { reached, release, arrive: () => (signal(), open) };
}

let afterVolumeRemoval: Gate | undefined;
let beforeVolumeCreate: Gate | undefined;

// Real Docker calls; only their timing is steered for the armed session.
gated.getVolume = (name: string) => {
  const v = real.getVolume(name);
  const remove = v.remove.bind(v);
  v.remove = (async (...args: unknown[]) => {
    const r = await (remove as (...a: unknown[]) => Promise<unknown>)(...args);
    const g = afterVolumeRemoval;
    if (g && name.endsWith('-ws')) {
      afterVolumeRemoval = undefined;
      await g.arrive();
    }
    return r;
  }) as typeof v.remove;
  return v;
};
gated.createVolume = (async (opts: { Name: string }) => {
  const g = beforeVolumeCreate;
  if (g) {
    beforeVolumeCreate = undefined;
    await g.arrive();
  }
  return real.createVolume(opts);
}) as typeof gated.createVolume;

const loopsOf = (file: string) =>
  execFileSync('losetup', ['-n', '-O', 'NAME', '-j', file], { encoding: 'utf8' }).split('\n').filter(Boolean);
const backing = (dev: string) => readFileSync(`/sys/block/${dev.replace('/dev/', '')}/loop/backing_file`, 'utf8').trim();

beforeAll(async () => {
  await requireImage();
  manager = new SandboxManager({ namePrefix: prefix, reapIntervalMs: 0, image: IMAGE, docker: gated });
  reaping = new SandboxManager({ namePrefix: reapPrefix, reapIntervalMs: 0, idleStopMs: IDLE_STOP_MS, image: IMAGE, docker: gated });
  expect(await manager.workspaceMode()).toBe('loop');
});
afterAll(async () => {
  await reapAll(manager, prefix);
  await reapAll(reaping, reapPrefix);
});

/** A and B each write their marker; B is stopped; A is stopped by `stopA` while A's next command connects. */
async function race(manager: SandboxManager, stopA: (a: string) => Promise<unknown>, prefix: string): Promise<void> {
  const a = sessionId();
  const b = sessionId();
  const sbA = await manager.sandboxFor(a);
  const sbB = await manager.sandboxFor(b);
  expect(await bash(sbA, 'echo A > owner')).toMatchObject({ ok: true });
  expect(await bash(sbB, 'echo B > owner')).toMatchObject({ ok: true });
  await manager.stop(b); // B's image is detached, ready to take a freed device
  const imageA = (await manager.workspaceImage(a))!;
  const imageB = (await manager.workspaceImage(b))!;
  const [devA] = loopsOf(imageA);
  expect(devA).toBeDefined();

  const held = (afterVolumeRemoval = gate());
  const creating = (beforeVolumeCreate = gate());
  const stopping = stopA(a);
  await held.reached; // A's container and volume are gone, its device not yet detached
  const reading = bash(sbA, 'cat owner');
  // Unprotected, the connect reaches the volume's creation with the old device in well under this.
  await Promise.race([creating.reached, new Promise((r) => setTimeout(r, 3_000))]);
  held.release();
  await stopping;
  // Another session takes the device number the detach freed.
  try {
    execFileSync('losetup', [devA!, imageB]);
  } catch {
    // A's own connect, run after the stop, took it first: nothing to steal.
  }
  creating.release();
  const r = await reading;
  expect(r).toMatchObject({ ok: true, stdout: 'A\n' });
  // Every device attached to A's image is backed by A's image, and the volume names one of them.
  const devs = loopsOf(imageA);
  expect(devs).toHaveLength(1);
  expect(backing(devs[0]!)).toBe(imageA);
  const vol = await real.getVolume(volumeName(prefix, a)).inspect();
  expect((vol as { Options?: Record<string, string> }).Options?.device).toBe(devs[0]);
  // B comes back on its own filesystem too.
  expect(await bash(sbB, 'cat owner')).toMatchObject({ ok: true, stdout: 'B\n' });
}

describe('a teardown racing a connect of the same session', () => {
  it("a connect during stop() never mounts another session's filesystem", () => race(manager, (a) => manager.stop(a), prefix), 120_000);

  it("a connect during the reaper's idle stop never mounts another session's filesystem", () =>
    race(reaping, async () => {
      await new Promise((r) => setTimeout(r, IDLE_STOP_MS + 200)); // A is idle now
      const r = await reaping.reap();
      expect(r.stoppedContainers).toBe(1);
    }, reapPrefix), 120_000);
});
