// A workspace image attached to a loop device by a worker running in a
// container (docker-compose.yml): after that container restarts, sysfs names
// the backing file as the old container's mount saw it (`/workspaces/X.img`,
// not `/var/lib/thinkflow/workspaces/X.img`). The new worker must still know
// the device as its session's (by device and inode), or every command of the
// session fails with loop_device_mismatch (seen with `compose restart`).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceImages } from '../../../services/sandbox/workspace-fs.ts';
import { backingFileOf, detachLoop } from '../../../services/sandbox/host-tools.ts';

const canLoop = process.getuid?.() === 0;
let root: string;
let images: WorkspaceImages;
const attached: string[] = [];

/**
 * Attaches `file` (in `<root>/workspaces`) from a mount namespace of its own
 * where `<root>` is bind-mounted elsewhere, as a worker container binds
 * /var/lib/thinkflow: the host then reads its path as `/workspaces/NAME`.
 */
function attachFromOtherNamespace(file: string): string {
  const view = `/tmp/tf-ns-view-${process.pid}`;
  const dev = execFileSync('unshare', ['-m', 'sh', '-c',
    `mkdir -p ${view} && mount --bind "${root}" ${view} && losetup --find --show "${view}/workspaces/${path.basename(file)}"`,
  ], { encoding: 'utf8' }).trim();
  attached.push(dev);
  return dev;
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'tf-loopns-'));
  mkdirSync(path.join(root, 'workspaces'));
  images = new WorkspaceImages({ dir: path.join(root, 'workspaces'), namePrefix: 'tfns-', bytes: 1 << 20, inodes: 1024, owner: '1000:1000' });
});
afterAll(async () => {
  for (const dev of attached) await detachLoop(dev);
  rmSync(root, { recursive: true, force: true });
  rmSync(`/tmp/tf-ns-view-${process.pid}`, { recursive: true, force: true });
});

describe.runIf(canLoop)('a loop device attached from another mount namespace', () => {
  it('is still its session\'s, though sysfs spells its file differently; another file\'s device is not', async () => {
    const mine = images.imageOf('ses_mine');
    const other = images.imageOf('ses_other');
    writeFileSync(mine, Buffer.alloc(1 << 20));
    writeFileSync(other, Buffer.alloc(1 << 20));
    const dev = attachFromOtherNamespace(mine);
    const otherDev = attachFromOtherNamespace(other);
    // The situation itself: the path sysfs gives is not the image's path here.
    expect(await backingFileOf(dev)).toBe('/workspaces/tfns-ses_mine.img');
    await expect(images.assertOwns('ses_mine', dev)).resolves.toBeUndefined();
    await expect(images.assertOwns('ses_mine', otherDev)).rejects.toThrow(/is attached to .*ses_other\.img, not to .*ses_mine\.img/);
  });

  it('unlinked, it is found as an orphan of this prefix and directory', async () => {
    const gone = images.imageOf('ses_gone');
    writeFileSync(gone, Buffer.alloc(1 << 20));
    const dev = attachFromOtherNamespace(gone);
    rmSync(gone);
    expect(await images.orphanLoops()).toContain(dev);
    const stranger = new WorkspaceImages({ dir: path.join(root, 'workspaces'), namePrefix: 'other-', bytes: 1 << 20, inodes: 1024, owner: '1000:1000' });
    expect(await stranger.orphanLoops()).not.toContain(dev);
  });
});
