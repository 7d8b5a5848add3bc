// The executor's own Node.js (sandbox-image/build.sh): the image keeps io_uring off for it, the file tools act with
// the command user's credentials whatever seccomp profile the container gets, and a runtime that does not start in
// the image leaves the image that was there.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXECUTOR_NODE } from '../../../services/sandbox/container-spec.ts';
import { bash, cmd, docker, IMAGE, newManager, reapAll, requireImage, sessionId, testPrefix } from './helpers.ts';

const BUILD = new URL('../../../sandbox-image/build.sh', import.meta.url).pathname;

beforeAll(() => requireImage());

describe('the executor runtime in the image', () => {
  it('runs the executor on the runtime, with libuv told never to make an io_uring ring', async () => {
    const config = (await docker.getImage(IMAGE).inspect()).Config;
    expect(config.Entrypoint).toEqual(['/usr/bin/tini', '--', EXECUTOR_NODE, '/opt/thinkflow/executor/main.mjs']);
    expect(config.Env).toContain('UV_USE_IO_URING=0');
  });

  // A ring made while the executor is root would write with root's credentials after it switched users
  // (CVE-2024-22017); Docker's own default profile (before 25) lets io_uring_setup through, the shipped one does not.
  for (const seccompProfile of [undefined, 'default']) {
    it(`file tools write as the command user, copy and edit included (seccomp: ${seccompProfile ?? 'shipped'})`, async () => {
      const prefix = testPrefix('rt');
      const manager = newManager(prefix, seccompProfile ? { seccompProfile } : {});
      try {
        const sb = await manager.sandboxFor(sessionId());
        for (const c of [
          cmd({ tool: 'write', path: 'a.txt', content: 'one\n' }),
          cmd({ tool: 'append', path: 'b.txt', content: 'two\n' }),
          cmd({ tool: 'copy', path: 'a.txt', dest: 'c.txt' }),
          cmd({ tool: 'edit', path: 'a.txt', old_text: 'one', new_text: 'uno' }),
        ]) { const r = await sb.execute(c); expect(r.ok, `${c.tool}: ${JSON.stringify(r)}`).toBe(true); }
        expect((await bash(sb, 'stat -c "%n %u" a.txt b.txt c.txt')).stdout).toBe('a.txt 1000\nb.txt 1000\nc.txt 1000\n');
      } finally {
        await reapAll(manager, prefix);
      }
    });
  }
});

describe('build.sh with a runtime that does not start in the image', () => {
  const tag = `tft-runtime-${randomBytes(3).toString('hex')}:latest`;
  const dir = mkdtempSync(path.join(tmpdir(), 'tf-runtime-'));
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
  });
  const build = (node: string) => spawnSync('bash', [BUILD], { env: { ...process.env, THINKFLOW_SANDBOX_IMAGE: tag, THINKFLOW_SANDBOX_NODE: node }, encoding: 'utf8' });

  it('fails naming THINKFLOW_SANDBOX_NODE=debian and leaves the image that was there', async () => {
    const good = build(process.execPath);
    expect(good.status, good.stderr).toBe(0);
    const before = (await docker.getImage(tag).inspect()).Id;
    // Passes every check on this machine (an ELF needing only libc, a version it claims), then exits 1 in the image.
    const liar = path.join(dir, 'node');
    writeFileSync(liar, '#!/bin/sh\necho "OK v20.20.2 /bin/false"\n');
    chmodSync(liar, 0o755);
    const bad = build(liar);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('does not start in the image');
    expect(bad.stderr).toContain('THINKFLOW_SANDBOX_NODE=debian');
    expect((await docker.getImage(tag).inspect()).Id).toBe(before);
    const candidates = await docker.listImages({ filters: { reference: ['thinkflow/sandbox-candidate'] } });
    expect(candidates).toEqual([]);
  }, 300_000);
});
