import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runHostTool } from './host-tools.ts';

// A workspace image is a copy of a template made once per (size, inodes,
// owner): mkfs and the lost+found removal leave the hot path, and a copy of
// a sparse file (a reflink where the host fs can) costs a few milliseconds
// whatever the size.

export type FsShape = { bytes: number; inodes: number; owner: string };

// Bumped when the mkfs arguments change, so an old template is never reused.
const TEMPLATE_VERSION = 1;
const pending = new Map<string, Promise<string>>();

export const templatePath = (dir: string, s: FsShape) =>
  path.join(dir, `.template-v${TEMPLATE_VERSION}-${s.bytes}-${s.inodes}-${s.owner.replace(':', '.')}.img`);

/** The template's path, made when absent (once per process and shape; a concurrent maker elsewhere wins by rename). */
export function ensureTemplate(dir: string, shape: FsShape): Promise<string> {
  const file = templatePath(dir, shape);
  let p = pending.get(file);
  if (!p) {
    p = makeTemplate(dir, file, shape).finally(() => pending.delete(file));
    pending.set(file, p);
  }
  return p;
}

async function makeTemplate(dir: string, file: string, s: FsShape): Promise<string> {
  if (await exists(file)) return file;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, '', { mode: 0o600 });
    await truncate(tmp, s.bytes); // sparse: no block is allocated yet
    // -m 0: no blocks reserved for root (commands never run as root);
    // lazy init: tables stay holes (read as zeros), the mount skips zeroing
    // them (noinit_itable), so a fresh workspace costs the host ~1 MiB.
    await runHostTool('mkfs.ext4', [
      '-q', '-F', '-b', '4096', '-m', '0', '-N', String(s.inodes),
      '-E', `lazy_itable_init=1,lazy_journal_init=1,root_owner=${s.owner}`, '-L', 'workspace', tmp,
    ]);
    // The workspace root is the model's view: no root-owned lost+found in it (e2fsck recreates one when needed).
    await runHostTool('debugfs', ['-w', '-R', 'rmdir lost+found', tmp]);
    await rename(tmp, file);
    return file;
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Copies the template to `dest` (sparse, or a reflink), via a temporary name so a half copy is never taken for an image. */
export async function cloneTemplate(template: string, dest: string): Promise<void> {
  const tmp = `${dest}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    await copyTemplate(template, tmp);
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** A sparse (or reflinked) copy of the template at `to`, which the caller names and renames. */
export async function copyTemplate(template: string, to: string): Promise<void> {
  await runHostTool('cp', ['--sparse=always', '--reflink=auto', '--no-preserve=all', template, to]);
}
