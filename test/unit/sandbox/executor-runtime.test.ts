// Which Node.js sandbox-image/build.sh puts in the image for the executor (its runtime_node): the machine's own
// from 20.11.1, the binary Node names as its own; anything else falls back to Debian's Node, said on stderr. Read
// through `build.sh --print-hash`, which stops before Docker: the hash names the runtime chosen.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BUILD = new URL('../../../sandbox-image/build.sh', import.meta.url).pathname;
const dir = mkdtempSync(path.join(tmpdir(), 'tf-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function printHash(node: string): { hash: string; said: string } {
  const r = spawnSync('bash', [BUILD, '--print-hash'], { env: { ...process.env, THINKFLOW_SANDBOX_NODE: node }, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return { hash: r.stdout.trim(), said: r.stderr };
}

/** An executable shell script `name` with `body`. */
function script(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("build.sh's executor runtime", () => {
  const debian = printHash('debian').hash;
  const machine = printHash(process.execPath);

  it("takes this machine's Node (20.11.1 or newer), so the image differs from one on Debian's", () => {
    expect(machine.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(machine.hash).not.toBe(debian);
    expect(machine.said).toBe('');
  });

  it('takes the binary behind a shim that talks first, not the shim', () => {
    const shim = script('shim', `echo "Now using node v20 (npm v10)"\nexec "${process.execPath}" "$@"`);
    expect(printHash(shim).hash).toBe(machine.hash);
  });

  it('refuses a Node before 20.11.1 (io_uring on by default: file operations with root\'s credentials)', () => {
    for (const version of ['v20.10.0', 'v20.11.0', 'v21.6.1', 'v18.20.4']) {
      // The probe's own verdict is what build.sh reads: a fake answers as such a version would.
      const old = script(`node-${version}`, `echo "OLD ${version} ${process.execPath}"`);
      const r = printHash(old);
      expect(r.hash, version).toBe(debian);
      expect(r.said).toContain(`is not Node.js 20.11.1 or newer (${version})`);
    }
  });

  it('refuses a runtime that is not an ELF binary, and one that prints nothing usable', () => {
    const fake = script('fake-node', `echo "OK v22.1.0 ${path.join(dir, 'fake-node')}"`);
    expect(printHash(fake)).toEqual({ hash: debian, said: expect.stringContaining('is not an ELF binary') });
    const mute = script('mute-node', 'echo 20');
    expect(printHash(mute)).toEqual({ hash: debian, said: expect.stringContaining('is not Node.js 20.11.1 or newer') });
  });
});
