// The host side of the egress path: per-session socket directories and the
// reaper's rule for them (decided on the facts it is handed, no Docker).
import { chmod, chown, mkdir, mkdtemp, rm, stat, utimes } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressDirs } from '../../../services/sandbox/egress-dirs.ts';
import { reapEgressDirs } from '../../../services/sandbox/reap-egress.ts';
import { resolveSandboxOptions } from '../../../services/sandbox/index.ts';
import { ENV_DEFAULTS, loadConfig } from '../../../services/config/index.ts';
import { EGRESS_MOUNT, EGRESS_SOCKET_NAME } from '../../../services/sandbox/index.ts';
import { EGRESS_SOCKET } from '../../../sandbox-image/executor/egress-relay.mjs';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'tf-egress-dirs-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('EgressDirs', () => {
  it('mounts the directory where the in-container relay dials', () => {
    expect(path.posix.join(EGRESS_MOUNT, EGRESS_SOCKET_NAME)).toBe(EGRESS_SOCKET);
  });

  it('defaults to THINKFLOW_EGRESS_DIR\'s default, which the config passes on', () => {
    expect(resolveSandboxOptions({}).egressDir).toBe('/var/lib/thinkflow/egress');
    expect(ENV_DEFAULTS.THINKFLOW_EGRESS_DIR).toBe('/var/lib/thinkflow/egress');
    expect(loadConfig({ THINKFLOW_EGRESS_DIR: '/srv/egress' }).egressDir).toBe('/srv/egress');
  });

  it('names a socket per session under <dir>/<prefix><slug>/ and makes the directory 0711 in a 0700 root, whatever the umask', async () => {
    const dirs = new EgressDirs({ dir: path.join(root, 'a'), namePrefix: 'tf-' });
    expect(dirs.socketPath('ses_abc')).toBe(path.join(root, 'a', 'tf-ses_abc', 'egress.sock'));
    const old = process.umask(0o022);
    try {
      expect(await dirs.prepare('ses_abc')).toBe(dirs.socketPath('ses_abc'));
    } finally {
      process.umask(old);
    }
    expect((await stat(dirs.dirOf('ses_abc'))).mode & 0o777).toBe(0o711);
    expect((await stat(path.join(root, 'a'))).mode & 0o777).toBe(0o700);
  });

  it('prepare is idempotent, tightens a directory left with another mode and refreshes its age', async () => {
    const dirs = new EgressDirs({ dir: root, namePrefix: 'tf-' });
    await mkdir(dirs.dirOf('ses_old'), { mode: 0o755 });
    await utimes(dirs.dirOf('ses_old'), new Date(0), new Date(0));
    await dirs.prepare('ses_old');
    await dirs.prepare('ses_old');
    const st = await stat(dirs.dirOf('ses_old'));
    expect(st.mode & 0o777).toBe(0o711);
    expect(Date.now() - st.mtimeMs).toBeLessThan(60_000);
  });

  it('refuses a root directory other users can enter (its sockets are 0666), at construction and before a session', async () => {
    const open = path.join(root, 'shared');
    await mkdir(open, { mode: 0o700 });
    const dirs = new EgressDirs({ dir: open, namePrefix: 'tf-' });
    await chmod(open, 0o755);
    await expect(dirs.prepare('ses_x')).rejects.toThrow(/egress directory .*shared is mode 0755: THINKFLOW_EGRESS_DIR must be root's alone \(0700\)/);
    expect(existsSync(dirs.dirOf('ses_x'))).toBe(false);
    expect(() => new EgressDirs({ dir: open, namePrefix: 'tf-' })).toThrow(/mode 0755/);
    await chmod(open, 0o701);
    expect(() => new EgressDirs({ dir: open, namePrefix: 'tf-' })).toThrow(/mode 0701/);
  });

  // Mode alone is not enough: a 0700 root of another user is that user's to enter, list and
  // rename in, and the sessions' directories (0711) and sockets (0666) in it admit anyone who gets there.
  it.skipIf(process.geteuid?.() !== 0)('refuses a 0700 root directory owned by another user, at construction and before a session', async () => {
    const foreign = path.join(root, 'foreign');
    await mkdir(foreign, { mode: 0o700 });
    await chown(foreign, 1000, 1000);
    expect(() => new EgressDirs({ dir: foreign, namePrefix: 'tf-' })).toThrow(/egress directory .*foreign is owned by uid 1000, not this service's \(uid 0\): THINKFLOW_EGRESS_DIR/);
    const later = path.join(root, 'later');
    await mkdir(later, { mode: 0o700 });
    const dirs = new EgressDirs({ dir: later, namePrefix: 'tf-' });
    await chown(later, 1000, 1000);
    await expect(dirs.prepare('ses_x')).rejects.toThrow(/owned by uid 1000/);
    expect(existsSync(dirs.dirOf('ses_x'))).toBe(false);
  });

  // The API role makes a SandboxManager too, and needs neither root nor this directory:
  // beside a worker on one host (/var/lib/thinkflow is 0700 root) it must still start.
  it.skipIf(process.geteuid?.() !== 0)('is made by a process that cannot reach the directory at all (the API as another user); only prepare needs it', () => {
    const module = path.resolve('services/sandbox/egress-dirs.ts');
    const code = `import { EgressDirs } from ${JSON.stringify(module)}; new EgressDirs({ dir: ${JSON.stringify(path.join(root, 'closed', 'egress'))}, namePrefix: 'tf-' }); console.log('made');`;
    const out = execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).toBe('made\n');
  });

  it('remove is idempotent; list sees only its own prefix', async () => {
    const mine = new EgressDirs({ dir: root, namePrefix: 'mine-' });
    const theirs = new EgressDirs({ dir: root, namePrefix: 'theirs-' });
    await mine.prepare('ses_1');
    await theirs.prepare('ses_2');
    expect((await mine.list()).map((d) => d.slug)).toEqual(['ses_1']);
    await mine.remove('ses_1');
    await mine.remove('ses_1');
    expect(existsSync(mine.dirOf('ses_1'))).toBe(false);
    expect(await new EgressDirs({ dir: path.join(root, 'never-made'), namePrefix: 'x-' }).list()).toEqual([]);
  });

  it('refuses at construction a directory too long for a Unix socket path (108 bytes with the NUL)', () => {
    expect(() => new EgressDirs({ dir: `/${'d'.repeat(60)}`, namePrefix: 'thinkflow-' })).toThrow(/THINKFLOW_EGRESS_DIR/);
    expect(() => new EgressDirs({ dir: '/var/lib/thinkflow/egress', namePrefix: 'thinkflow-' })).not.toThrow();
  });
});

describe('the reaper\'s rule for egress directories', () => {
  const now = 1_000_000_000;
  const ttl = 1_000;
  const run = async (o: { slug: string; mtimeMs: number; keep?: string[]; dropped?: string[]; live?: string[]; images?: string[]; used?: number }) => {
    const removed: string[] = [];
    const dirs = { list: async () => [{ slug: o.slug, dir: `/x/${o.slug}`, mtimeMs: o.mtimeMs }], removeDir: async (d: string) => void removed.push(d) };
    await reapEgressDirs(dirs, {
      idleTtlMs: ttl, now, keep: new Set(o.keep ?? []), dropped: new Set(o.dropped ?? []),
      liveSessions: o.live && new Set(o.live), imageSlugs: new Set(o.images ?? []), lastUsedBySlug: () => o.used,
    }, (_s, _w, fn) => fn());
    return removed.length > 0;
  };

  it('keeps a session with a container, or with an image (stopped), or opened within the TTL', async () => {
    expect(await run({ slug: 'ses_a', mtimeMs: 0, keep: ['ses_a'] })).toBe(false);
    expect(await run({ slug: 'ses_a', mtimeMs: 0, images: ['ses_a'] })).toBe(false);
    expect(await run({ slug: 'ses_a', mtimeMs: now - ttl + 1 })).toBe(false);
    expect(await run({ slug: 'ses_a', mtimeMs: 0, used: now - 10 })).toBe(false);
  });

  it('removes a gone session\'s, a dropped one\'s, and one with neither container nor image past the TTL', async () => {
    expect(await run({ slug: 'ses_a', mtimeMs: now, live: ['ses_b'], images: ['ses_a'] })).toBe(true);
    expect(await run({ slug: 'ses_a', mtimeMs: now, dropped: ['ses_a'] })).toBe(true);
    expect(await run({ slug: 'ses_a', mtimeMs: now - ttl - 1 })).toBe(true);
    // Dropped by this pass but opened again since: kept.
    expect(await run({ slug: 'ses_a', mtimeMs: now, dropped: ['ses_a'], used: now + 5 })).toBe(false);
  });
});
