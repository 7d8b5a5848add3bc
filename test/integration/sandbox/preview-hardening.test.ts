// Previews (services/sandbox/preview.ts) against a session that is no longer
// there: a preview asked just before its session is deleted (the route saw
// the approval pending; DELETE then withdrew it and removed the sandbox)
// reaches the worker after the removal. It must not open a new sandbox for
// the deleted session (a container, volume and workspace image nobody owns,
// left until the idle reaper finds them): it runs on the empty workspace the
// session now has, and leaves nothing of the session behind.
// Real Docker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPreviews, type SandboxManager } from '../../../services/sandbox/index.ts';
import { cmd, docker, leftovers, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('prevh');
let manager: SandboxManager;
let previews: SandboxPreviews;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix, { idlePauseMs: 0 });
  previews = new SandboxPreviews(manager, { docker, maxRunMs: 2_000, setupMs: 30_000, maxWorkspaceBytes: 4 * 1024 * 1024 });
});
afterAll(() => reapAll(manager, prefix));

/** What is left on the host of one session (by its slug under this file's prefix). */
async function leftOf(sid: string): Promise<string[]> {
  const l = await leftovers(`${prefix}${sid}`);
  return [...l.containers, ...l.volumes, ...l.images, ...l.loops, ...l.egress];
}

describe('a preview of a session that is gone', () => {
  it('opens no sandbox for a removed session: it runs on an empty copy, nothing of the session is left behind', async () => {
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'a.txt', content: 'a\n' }));
    await manager.remove(sid); // DELETE /v1/sessions/:id, while the preview call was on its way
    expect(await leftOf(sid)).toEqual([]);
    const run = await previews.run(sid, cmd({ tool: 'bash', cmd: 'ls; cat a.txt' }));
    expect(await leftOf(sid)).toEqual([]);
    expect(run.copied_bytes).toBe(0);
    expect(run.result.stdout).toBe('');
    expect(run.result.ok).toBe(false);
  }, 120_000);

  it('still previews a session whose sandbox was only stopped (its workspace kept)', async () => {
    const sid = sessionId();
    const sb = await manager.sandboxFor(sid);
    await sb.execute(cmd({ tool: 'write', path: 'kept.txt', content: 'kept\n' }));
    await manager.stop(sid);
    const run = await previews.run(sid, cmd({ tool: 'bash', cmd: 'cat kept.txt' }));
    expect(run.result).toMatchObject({ ok: true, exit_code: 0, stdout: 'kept\n' });
    await manager.remove(sid);
  }, 120_000);
});
