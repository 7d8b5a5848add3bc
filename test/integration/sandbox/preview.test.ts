// Previews (services/sandbox/preview.ts): a command run in a throwaway
// sandbox on a copy of its session's workspace. Real Docker. The real
// workspace is compared byte for byte before and after, and every preview
// sandbox (container, volume, image, loop device, egress directory) is gone
// after each preview, also when it was refused or cut.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PreviewRefused, SandboxPreviews, type Sandbox, type SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, cmd, docker, leftovers, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('prev');
let manager: SandboxManager;
let previews: SandboxPreviews;
let sb: Sandbox;
let sid: string;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix, { idlePauseMs: 0 });
  previews = new SandboxPreviews(manager, { docker, maxRunMs: 2_000, setupMs: 30_000, maxWorkspaceBytes: 4 * 1024 * 1024 });
  sid = sessionId();
  sb = await manager.sandboxFor(sid);
  await sb.execute(cmd({ tool: 'write', path: 'old.txt', content: 'old\n' }));
  await sb.execute(cmd({ tool: 'write', path: 'notes/plan.md', content: 'one\ntwo\nthree\n' }));
  await bash(sb, 'printf "#!/bin/sh\\necho from-script\\n" > run.sh && chmod 755 run.sh && chmod 000 notes/plan.md');
  await manager.workspace.setBaseline(sid);
});
afterAll(() => reapAll(manager, prefix));

/** The real workspace as its archive: names, modes and bytes (tar is sorted by name; mtimes are in it too). */
async function fingerprint(): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of (await manager.workspace.archive(sid, 'tar')) as Readable) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Preview sandboxes left under this file's prefix: containers and volumes by the preview label, images, loop devices, egress directories. */
async function previewLeftovers(): Promise<string[]> {
  const filters = { label: ['thinkflow.preview=true'] };
  const containers = (await docker.listContainers({ all: true, filters })).flatMap((c) => c.Names).filter((n) => n.includes(prefix));
  const volumes = ((await docker.listVolumes({ filters })).Volumes ?? []).map((v) => v.Name).filter((n) => n.startsWith(prefix));
  const rest = await leftovers(`${prefix}preview_`);
  return [...containers, ...volumes, ...rest.images, ...rest.loops, ...rest.egress];
}

describe('a preview runs the command on a copy and throws the copy away', () => {
  it('shows the output and the changes of a bash command; the real workspace is untouched', async () => {
    const before = await fingerprint();
    const run = await previews.run(sid, cmd({ tool: 'bash', cmd: 'bash -c "echo hi > new.txt; rm old.txt; echo out; ./run.sh; cat notes/plan.md || echo unreadable >&2"' }));
    expect(run.result).toMatchObject({ ok: true, exit_code: 0 });
    // The copy keeps modes: the script is executable, the unreadable file stays unreadable to commands.
    expect(run.result.stdout).toBe('out\nfrom-script\n');
    expect(run.result.stderr).toContain('unreadable');
    const byPath = Object.fromEntries(run.changes.map((c) => [c.path, c]));
    expect(byPath['new.txt']).toMatchObject({ change: 'added', bytes: 3 });
    expect(byPath['new.txt']!.diff).toContain('+hi');
    expect(byPath['old.txt']).toMatchObject({ change: 'deleted' });
    expect(byPath['old.txt']!.diff).toContain('-old');
    expect(run.changes).toHaveLength(2);
    expect(await fingerprint()).toBe(before);
    const real = await sb.readPath('.');
    expect(real.kind === 'dir' && real.entries.map((e) => e.name).sort()).toEqual(['notes', 'old.txt', 'run.sh']);
    expect(await previewLeftovers()).toEqual([]);
  });

  it('shows what a file tool would change, with the diff of an edit', async () => {
    const before = await fingerprint();
    await bash(sb, 'chmod 644 notes/plan.md');
    const mid = await fingerprint();
    const run = await previews.run(sid, cmd({ tool: 'edit', path: 'notes/plan.md', old_text: 'two', new_text: 'TWO' }));
    expect(run.result.ok).toBe(true);
    expect(run.changes).toEqual([expect.objectContaining({ path: 'notes/plan.md', change: 'modified' })]);
    expect(run.changes[0]!.diff).toMatch(/-two\n\+TWO/);
    expect(await fingerprint()).toBe(mid);
    expect(mid).not.toBe(before);
    await bash(sb, 'chmod 000 notes/plan.md');
    expect(await fingerprint()).toBe(before);
    // A write, to a name git quotes in a patch header.
    const write = await previews.run(sid, cmd({ tool: 'write', path: 'notes/naïve plan.md', content: 'first\nsecond\n' }));
    expect(write.changes).toEqual([{ path: 'notes/naïve plan.md', change: 'added', bytes: 13, diff: expect.stringMatching(/\+first\n\+second\n$/) }]);
    expect(await fingerprint()).toBe(before);
  });

  it('cuts a command that runs past the bound and says so', async () => {
    const t0 = Date.now();
    const run = await previews.run(sid, cmd({ tool: 'bash', cmd: 'echo started; touch partial.txt; sleep 30', timeout: 600 }));
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(run.run_limit_ms).toBe(2_000);
    expect(run.result).toMatchObject({ ok: false, error_code: 'timeout' });
    expect(run.result.stdout).toBe('started\n');
    expect(run.changes.map((c) => c.path)).toEqual(['partial.txt']);
    expect(await previewLeftovers()).toEqual([]);
  });

  it('refuses a workspace larger than the limit, and leaves nothing behind', async () => {
    await bash(sb, 'head -c 6000000 /dev/urandom > big.bin');
    try {
      const err = await previews.run(sid, cmd({ tool: 'bash', cmd: 'true' })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PreviewRefused);
      expect(err).toMatchObject({ code: 'workspace_too_large' });
      expect((err as Error).message).toMatch(/larger than the preview limit of 4 MiB/);
      expect(await previewLeftovers()).toEqual([]);
    } finally {
      await bash(sb, 'rm big.bin');
    }
  });

  it('gives up a preview past its whole bound and leaves nothing behind', async () => {
    // No time at all for the setup: the run's own 1 s plus any start or copy is past the bound, however fast the host.
    const hasty = new SandboxPreviews(manager, { docker, maxRunMs: 1_000, setupMs: 0 });
    const t0 = Date.now();
    const err = await hasty.run(sid, cmd({ tool: 'bash', cmd: 'sleep 5' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'preview_timeout', message: expect.stringMatching(/did not finish within its bound of 1 s/) });
    expect(Date.now() - t0).toBeLessThan(15_000);
    await expect.poll(previewLeftovers, { timeout: 30_000, interval: 500 }).toEqual([]);
  });

  it('runs a bounded number at once; one more is refused as busy', async () => {
    const busy = new SandboxPreviews(manager, { docker, perProcess: 1, maxRunMs: 2_000 });
    const first = busy.run(sid, cmd({ tool: 'bash', cmd: 'sleep 1' }));
    const second = await busy.run(sid, cmd({ tool: 'bash', cmd: 'true' })).catch((e: unknown) => e);
    expect(second).toMatchObject({ code: 'previews_busy' });
    // While one runs its sandbox is there (so the checks of the others can see one).
    await expect.poll(previewLeftovers, { timeout: 10_000 }).not.toEqual([]);
    expect((await first).result.ok).toBe(true);
    expect(await previewLeftovers()).toEqual([]);
  });
});
