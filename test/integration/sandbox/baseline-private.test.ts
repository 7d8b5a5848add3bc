// The workspace baseline's private area (container-spec.ts, baseline-store.mjs):
// commands can neither reach nor replace it, it outlives the container, and
// what the workspace-out programs read as root is not cut short by the
// sweep of the command user's processes after each command.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import tar from 'tar-stream';
import type { Sandbox, SandboxManager } from '../../../services/sandbox/index.ts';
import { bash, cmd, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const prefix = testPrefix('base');
let manager: SandboxManager;
let sb: Sandbox;
let sid: string;

beforeAll(async () => {
  await requireImage();
  manager = newManager(prefix);
  sid = sessionId();
  sb = await manager.sandboxFor(sid);
  await sb.execute(cmd({ tool: 'write', path: 'a.txt', content: 'one\n' }));
  await sb.execute(cmd({ tool: 'write', path: 'secret.txt', content: 'hidden\n' }));
  await manager.workspace.setBaseline(sid);
});
afterAll(() => reapAll(manager, prefix));

async function drain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) n += chunk.length;
  return n;
}

describe('the baseline is out of the commands\' reach', () => {
  it('shows commands an empty read-only directory they cannot move, and the store not at all', async () => {
    const r = await bash(sb, [
      'ls -A .thinkflow-private | wc -l',
      'touch .thinkflow-private/x 2>&1 | grep -c "Read-only"',
      'mv .thinkflow-private moved 2>&1 | grep -c "busy"',
      'rmdir .thinkflow-private 2>&1 | grep -c "busy"',
      'ls /var/lib/thinkflow 2>&1 | grep -c "Permission denied"',
      'find /workspace /var /tmp /home -name manifest.json 2>/dev/null | wc -l',
    ].join('; '));
    expect(r.stdout!.trim().split('\n')).toEqual(['0', '1', '1', '1', '1', '0']);
    // The API's listing of the workspace leaves it out.
    const root = await sb.readPath('.');
    expect(root.kind === 'dir' && root.entries.map((e) => e.name)).not.toContain('.thinkflow-private');
  });

  it('survives the container: a stopped and restarted sandbox compares against the same baseline', async () => {
    await bash(sb, 'echo two >> a.txt && chmod 000 secret.txt');
    const before = await manager.workspace.changes(sid);
    await manager.stop(sid);
    sb = await manager.sandboxFor(sid);
    const after = await manager.workspace.changes(sid);
    expect(after).toEqual(before);
    // A file the command user made unreadable is still compared (root with CAP_DAC_READ_SEARCH): only its mode changed, which git does not track.
    expect(after.changes).toEqual([{ path: 'a.txt', change: 'modified', bytes: 8 }]);
  });

  it('keeps a download going across the sweep that ends every command', async () => {
    await bash(sb, 'head -c 30000000 /dev/urandom > big.bin');
    const archive = await manager.workspace.archive(sid, 'tar');
    archive.pause();
    const r = await sb.execute(cmd({ tool: 'bash', cmd: 'sleep 0.5; true' }));
    expect(r.ok).toBe(true);
    // The tar (30 MB, far more than the pipes hold) was blocked mid-way while the command ended: it finishes whole.
    expect(await drain(archive)).toBeGreaterThan(30_000_000);
  });

  it('a new baseline replaces the old one; the next command does not take another', async () => {
    const set = await manager.workspace.setBaseline(sid);
    expect(set.files).toBe(3);
    expect((await manager.workspace.changes(sid)).changes).toEqual([]);
    await manager.workspace.ensureBaseline(sid);
    await bash(sb, 'rm big.bin');
    expect((await manager.workspace.changes(sid)).changes).toEqual([{ path: 'big.bin', change: 'deleted', bytes: 0 }]);
  });
});

describe('a command that needs the baseline', () => {
  it('is answered baseline_missing, not run, until the workspace has one; then runs against it', async () => {
    const fresh = sessionId();
    const box = await manager.sandboxFor(fresh);
    const write = cmd({ tool: 'write', path: 'x.txt', content: 'x' });
    const refused = await box.execute(write, { needsBaseline: true });
    expect(refused).toMatchObject({ ok: false, error_code: 'baseline_missing' });
    expect((await bash(box, 'ls -A | grep -v thinkflow | wc -l')).stdout).toBe('0\n');
    await manager.workspace.ensureBaseline(fresh);
    expect((await box.execute(write, { needsBaseline: true })).ok).toBe(true);
    expect((await manager.workspace.changes(fresh)).changes).toEqual([{ path: 'x.txt', change: 'added', bytes: 1 }]);
  });

  it('is asked again after an upload drops the baseline, though the executor had seen it settled', async () => {
    const fresh = sessionId();
    const box = await manager.sandboxFor(fresh);
    const write = (path: string) => cmd({ tool: 'write', path, content: 'x' });
    await manager.workspace.ensureBaseline(fresh);
    expect((await box.execute(write('before.txt'), { needsBaseline: true })).ok).toBe(true); // the executor keeps "settled" now
    const pack = tar.pack();
    pack.entry({ name: 'uploaded.txt' }, 'u');
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const c of pack as AsyncIterable<Buffer>) chunks.push(c);
    await box.uploadArchive(Readable.from([Buffer.concat(chunks)]), { check: () => null });
    expect(await box.execute(write('after.txt'), { needsBaseline: true })).toMatchObject({ ok: false, error_code: 'baseline_missing' });
    await manager.workspace.ensureBaseline(fresh);
    expect((await box.execute(write('after.txt'), { needsBaseline: true })).ok).toBe(true);
    expect((await manager.workspace.changes(fresh)).changes).toEqual([{ path: 'after.txt', change: 'added', bytes: 1 }]);
  });
});
