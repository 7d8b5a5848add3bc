// The executor's change list made ready ahead of a job's end
// (sandbox-image/executor): the code compiled once on the executor's own
// files at start-up (warmUpChanges), and the baseline's manifest read in idle
// time after a command (preloadBaseline). Neither may change what a change
// list answers: a baseline taken again after the read ahead is the one used.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: the executor is plain JavaScript with no type declarations for this module
import { warmUpChanges } from '../../../sandbox-image/executor/changes.mjs';

const EXECUTOR = new URL('../../../sandbox-image/executor/', import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

function scratch(): { ws: string; priv: string } {
  const root = mkdtempSync(join(tmpdir(), 'tf-warm-'));
  dirs.push(root);
  for (const d of ['ws', 'priv']) mkdirSync(join(root, d));
  return { ws: join(root, 'ws'), priv: join(root, 'priv') };
}

/** Runs `body` (an ES module's text) in a fresh Node with the scratch layout; its stdout. */
function node(t: { ws: string; priv: string }, body: string): string {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', body], {
    // Root's own ids throughout (asRoot would otherwise leave the test's process as the command user).
    cwd: EXECUTOR, env: { THINKFLOW_WORKSPACE: t.ws, THINKFLOW_PRIVATE_ROOT: t.priv, THINKFLOW_RUN_AS: '0:0' },
  });
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

describe('warmUpChanges', () => {
  it('walks and hashes a tree it only reads, as added files, and leaves the working directory as it was', () => {
    const t = scratch();
    mkdirSync(join(t.ws, 'lib'));
    for (let i = 0; i < 5; i++) writeFileSync(join(t.ws, 'lib', `m${i}.js`), `export const m = ${i};\n`);
    const cwd = process.cwd();
    expect(warmUpChanges(t.ws)).toBe(5);
    expect(process.cwd()).toBe(cwd);
    expect(readdirSync(join(t.ws, 'lib')).sort()).toEqual(['m0.js', 'm1.js', 'm2.js', 'm3.js', 'm4.js']);
    expect(readdirSync(t.priv)).toEqual([]); // nothing of a baseline written
  });

  it("the executor's own directory (what main.mjs warms up on) is walked without error", () => {
    expect(warmUpChanges(EXECUTOR)).toBeGreaterThan(10);
  });
});

describe('preloadBaseline', () => {
  const CHANGES = `
    const ops = await import('./workspace-ops.mjs');
    const { spawnSync } = await import('node:child_process');
    const { writeFileSync } = await import('node:fs');
    const ws = process.env.THINKFLOW_WORKSPACE;
    const baseline = () => spawnSync(process.execPath, ['workspace-out.mjs', 'baseline-set'], { env: process.env }).status;
    const names = () => ops.workspaceOp('changes').changes.map((c) => c.path + ':' + c.change).join(',');
  `;

  it('a baseline taken again after the read ahead is the one the change list uses', () => {
    const t = scratch();
    writeFileSync(join(t.ws, 'a.txt'), 'a');
    const out = node(t, `${CHANGES}
      if (baseline() !== 0) throw new Error('baseline');
      ops.preloadBaseline();
      writeFileSync(ws + '/b.txt', 'b');
      console.log(names());
      if (baseline() !== 0) throw new Error('baseline again'); // an upload's reset: a new generation
      writeFileSync(ws + '/c.txt', 'c');
      console.log(names());
    `);
    expect(out.trim().split('\n')).toEqual(['b.txt:added', 'c.txt:added']);
  });

  it('a read ahead before any baseline does not keep the change list from seeing the one taken after it', () => {
    const t = scratch();
    const out = node(t, `${CHANGES}
      ops.preloadBaseline(); // the first command came before its baseline
      console.log(JSON.stringify(ops.workspaceOp('changes').failed.code));
      writeFileSync(ws + '/a.txt', 'a');
      if (baseline() !== 0) throw new Error('baseline');
      ops.preloadBaseline();
      writeFileSync(ws + '/b.txt', 'b');
      console.log(names());
    `);
    expect(out.trim().split('\n')).toEqual(['"no_baseline"', 'b.txt:added']);
  });
});
