// `thinkflow submit --workspace DIR` packs the directory as it uploads: what
// GNU tar reads back is the tree, `.git`, empty files, modes, links and long
// names included; what no archive may hold (a FIFO) is skipped and reported.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packDirectory } from '../../../services/cli/tar-pack.ts';

let dir: string;
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'tf-pack-')); });
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('packDirectory', () => {
  it('gives a tar.gz that GNU tar extracts to the same tree', async () => {
    const src = join(dir, 'src');
    const long = `${'n'.repeat(60)}/${'m'.repeat(70)}.txt`;
    mkdirSync(join(src, '.git', 'refs'), { recursive: true });
    mkdirSync(join(src, 'n'.repeat(60)));
    writeFileSync(join(src, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(src, 'empty'), '');
    writeFileSync(join(src, 'run.sh'), '#!/bin/sh\n');
    chmodSync(join(src, 'run.sh'), 0o755);
    writeFileSync(join(src, long), 'long name\n');
    writeFileSync(join(src, 'big.bin'), Buffer.alloc(200_000, 7));
    symlinkSync('run.sh', join(src, 'link'));
    symlinkSync(`${'t'.repeat(150)}/target`, join(src, 'n'.repeat(60), `${'l'.repeat(80)}-link`)); // pax linkpath and path
    writeFileSync(join(src, 'large.bin'), Buffer.alloc(5_000_000, 3)); // more than the streams buffer: backpressure
    execFileSync('mkfifo', [join(src, 'pipe')]);
    const skipped: string[] = [];
    const archive = await buffer(packDirectory(src, (p) => skipped.push(p)));
    expect(skipped).toEqual(['pipe']);
    const out = join(dir, 'out');
    mkdirSync(out);
    execFileSync('tar', ['xzf', '-', '-C', out], { input: archive });
    rmSync(join(src, 'pipe'));
    execFileSync('diff', ['-r', '--no-dereference', src, out]);
    expect(execFileSync('stat', ['-c', '%a', join(out, 'run.sh')], { encoding: 'utf8' }).trim()).toBe('755');
  });

  it('fails the stream (does not hang) when a file cannot be read', async () => {
    const src = join(dir, 'src');
    mkdirSync(join(src, 'closed'), { recursive: true });
    writeFileSync(join(src, 'closed', 'x'), 'x');
    const stream = packDirectory(join(src, 'missing-dir'), () => {});
    await expect(buffer(stream)).rejects.toThrow(/ENOENT/);
  });
});
