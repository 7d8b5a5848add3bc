// The in-container side of workspace uploads, run as it runs in the sandbox
// (plain Node, no dependencies) on a temporary workspace: the extraction
// program (sandbox-image/executor/upload-extract.mjs) fed archives on stdin,
// and the executor's commit (upload-commit.mjs) merging the staged tree.
// The Docker round (as the command user, under the quota) is in
// test/integration/api/workspace-upload.test.ts.
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { tar, type FixtureEntry } from '../../integration/api/tar-fixtures.ts';

const EXECUTOR = new URL('../../../sandbox-image/executor/', import.meta.url).pathname;
const STAGING = '.thinkflow-upload-test';
let ws: string;

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'tf-upload-'));
  mkdirSync(join(ws, STAGING));
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

type Run = { code: number | null; lines: Record<string, any>[]; stderr: string };

function node(args: string[], input?: Buffer): Promise<Run> {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH, THINKFLOW_WORKSPACE: ws } });
  let out = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  child.stdin.on('error', () => {}); // the program may stop reading early (a refused archive): that is the point
  child.stdin.end(input ?? Buffer.alloc(0));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr, lines: out.trim() ? out.trim().split('\n').map((l) => JSON.parse(l)) : [] })));
}

/** The extraction program on a fresh staging directory, as the executor gives it one per upload. */
function extract(archive: Buffer, allowance = 'none', maxEntries = 1000): Promise<Run> {
  rmSync(join(ws, STAGING), { recursive: true, force: true });
  mkdirSync(join(ws, STAGING));
  return node([join(EXECUTOR, 'upload-extract.mjs'), join(ws, STAGING), allowance, String(maxEntries)], archive);
}

/** commitUpload in a process of its own (paths.mjs reads the workspace root at import). */
async function commit(symlinks: string[] = []): Promise<string> {
  const code = `import { commitUpload } from ${JSON.stringify(join(EXECUTOR, 'upload-commit.mjs'))};
    commitUpload(${JSON.stringify(STAGING)}, ${JSON.stringify(symlinks)}).then(() => console.log('ok'), (e) => console.log(e.code + ' ' + (e.entry ?? '') + ' ' + e.message));`;
  return (await new Promise<string>((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { PATH: process.env.PATH, THINKFLOW_WORKSPACE: ws } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('close', () => resolve(out));
  })).trim();
}

/** Every path under `dir` with its kind (and a link's target, a file's content). */
function listing(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel)).sort().flatMap((name) => {
    const r = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, r));
    if (st.isDirectory()) return [`${r}/`, ...listing(dir, r)];
    if (st.isSymbolicLink()) return [`${r} -> ${readlinkSync(join(dir, r))}`];
    return [`${r} = ${readFileSync(join(dir, r), 'utf8')} (${(st.mode & 0o777).toString(8)})`];
  });
}
const tree = () => listing(join(ws, STAGING, 'tree'));

describe('upload-extract.mjs', () => {
  it('stages files, directories and links as they will land, one line per entry, gzip or not', async () => {
    const entries: FixtureEntry[] = [
      { name: './', type: '5' }, { name: 'a/', type: '5' }, { name: 'a/x.txt', data: 'x' }, { name: 'run.sh', data: 'sh', mode: 0o775 },
      { name: 'a/deeper/y.txt', data: 'y' }, { name: 'l', type: '2', linkname: 'a/x.txt' }, { name: `long/${'n'.repeat(110)}`, data: 'pax' },
      { name: `long/${'g'.repeat(110)}`, data: 'gnu', longName: 'gnu' },
    ];
    for (const archive of [tar(entries), gzipSync(tar(entries))]) {
      const r = await extract(archive);
      expect(r.code).toBe(0);
      expect(r.lines.map((l) => l.e?.path ?? Object.keys(l)[0])).toEqual(['a', 'a/x.txt', 'run.sh', 'a/deeper/y.txt', 'l', `long/${'n'.repeat(110)}`, `long/${'g'.repeat(110)}`, 'done']);
      expect(tree()).toEqual([
        'a/', 'a/deeper/', 'a/deeper/y.txt = y (644)', 'a/x.txt = x (644)', 'l -> a/x.txt', 'long/', `long/${'g'.repeat(110)} = gnu (644)`, `long/${'n'.repeat(110)} = pax (644)`, 'run.sh = sh (755)',
      ]);
    }
  });

  it('lets a later entry of a name replace an earlier one, as tar does', async () => {
    const r = await extract(tar([{ name: 'f', data: '1' }, { name: 'f', data: '2' }, { name: 'g', data: 'x' }, { name: 'g', type: '2', linkname: 'f' }]));
    expect(r.code).toBe(0);
    expect(tree()).toEqual(['f = 2 (644)', 'g -> f']);
  });

  const REFUSED: [string, FixtureEntry[], string][] = [
    ['an absolute name', [{ name: '/etc/passwd', data: 'x' }], '/etc/passwd'],
    ['a .. component', [{ name: 'a/../../x', data: 'x' }], 'a/../../x'],
    ['a link out', [{ name: 'a/l', type: '2', linkname: '../../x' }], 'a/l'],
    ['an absolute link out', [{ name: 'l', type: '2', linkname: '/etc' }], 'l'],
    ['a hard link', [{ name: 'f', data: 'x' }, { name: 'h', type: '1', linkname: 'f' }], 'h'],
    ['a character device', [{ name: 'c', type: '3' }], 'c'],
    ['a block device', [{ name: 'b', type: '4' }], 'b'],
    ['a FIFO', [{ name: 'p', type: '6' }], 'p'],
    ['a sparse file', [{ name: 's', type: 'S' }], 's'],
    ['an entry through a link of the archive', [{ name: 'd/', type: '5' }, { name: 'l', type: '2', linkname: 'd' }, { name: 'l/x', data: 'x' }], 'l/x'],
    ['a file under a file', [{ name: 'f', data: 'x' }, { name: 'f/x', data: 'x' }], 'f/x'],
    ['a directory over a file', [{ name: 'f', data: 'x' }, { name: 'f/', type: '5' }], 'f/'],
    ['a file over a directory', [{ name: 'd/', type: '5' }, { name: 'd', data: 'x' }], 'd'],
    ['the baseline store', [{ name: '.thinkflow-private/baseline.json', data: '{}' }], '.thinkflow-private/baseline.json'],
    ['a staging directory', [{ name: './.thinkflow-upload-x/tree/f', data: 'x' }], './.thinkflow-upload-x/tree/f'],
    ['a NUL in a pax name', [{ name: `${'z'.repeat(101)}\0x`, data: 'x' }], `${'z'.repeat(101)}\0x`],
  ];
  for (const [what, entries, entry] of REFUSED) {
    it(`refuses ${what}: invalid_archive naming the entry, exit 1`, async () => {
      const r = await extract(tar(entries));
      expect(r.code).toBe(1);
      expect(r.lines.at(-1)).toMatchObject({ error: { code: 'invalid_archive', entry } });
    });
  }

  it('refuses truncated, corrupt, empty and non-gzip-after-all input as invalid_archive', async () => {
    const good = tar([{ name: 'f', data: 'x'.repeat(2000) }]);
    const gz = gzipSync(good);
    const corrupt = Buffer.from(good);
    corrupt[10] = corrupt[10]! ^ 0xff;
    // Cut in a file's data, in its padding, after the last entry (no end blocks), and a gzip stream cut short.
    for (const input of [good.subarray(0, 1000), good.subarray(0, 512 + 2010), good.subarray(0, 512 * 5), gz.subarray(0, gz.length - 10), corrupt, Buffer.alloc(0), Buffer.from([0x1f, 0x8b, 1, 2, 3])]) {
      const r = await extract(input);
      expect(r.code).toBe(1);
      expect(r.lines.at(-1)?.error?.code).toBe('invalid_archive');
    }
  });

  it('stops past its allowance or its entry cap with workspace_full, before writing the data', async () => {
    const big = await extract(tar([{ name: 'f', data: 'x'.repeat(10_000) }]), '8192');
    expect(big.lines.at(-1)).toMatchObject({ error: { code: 'workspace_full' } });
    const many = await extract(tar(Array.from({ length: 5 }, (_, i) => ({ name: `f${i}`, data: 'x' }))), 'none', 3);
    expect(many.lines.at(-1)).toMatchObject({ error: { code: 'workspace_full' } });
  });
});

describe('upload-commit.mjs', () => {
  beforeEach(() => {
    mkdirSync(join(ws, 'keep'));
    writeFileSync(join(ws, 'keep', 'a.txt'), 'A');
    writeFileSync(join(ws, 'top.txt'), 'T');
    symlinkSync('keep', join(ws, 'kl'));
  });
  const workspace = () => listing(ws).filter((p) => !p.startsWith(STAGING));

  it('moves new names whole, merges directories, replaces files and links', async () => {
    expect((await extract(tar([{ name: 'keep/a.txt', data: 'A2' }, { name: 'keep/b.txt', data: 'B' }, { name: 'new/n.txt', data: 'N' }, { name: 'top.txt', type: '2', linkname: 'keep/b.txt' }]))).code).toBe(0);
    expect(await commit(['top.txt'])).toBe('ok');
    expect(workspace()).toEqual(['keep/', 'keep/a.txt = A2 (644)', 'keep/b.txt = B (644)', 'kl -> keep', 'new/', 'new/n.txt = N (644)', 'top.txt -> keep/b.txt']);
  });

  it('refuses conflicts with the workspace before touching anything', async () => {
    const before = workspace();
    for (const [archive, entry] of [
      [tar([{ name: 'fine.txt', data: 'f' }, { name: 'keep', data: 'file over a directory' }]), 'keep'],
      [tar([{ name: 'fine.txt', data: 'f' }, { name: 'top.txt/', type: '5' }]), 'top.txt'],
      [tar([{ name: 'fine.txt', data: 'f' }, { name: 'kl/x.txt', data: 'through a link' }]), 'kl'],
    ] as const) {
      expect((await extract(archive)).code).toBe(0);
      expect(await commit()).toMatch(new RegExp(`^workspace_conflict ${entry} `));
      expect(workspace()).toEqual(before);
    }
  });

  it('undoes every rename when a link resolves outside through a link already there', async () => {
    symlinkSync('/etc', join(ws, 'out'));
    const before = workspace();
    expect((await extract(tar([{ name: 'keep/a.txt', data: 'changed' }, { name: 'new/x', data: 'x' }, { name: 'sneaky', type: '2', linkname: 'out/passwd' }]))).code).toBe(0);
    expect(await commit(['sneaky'])).toMatch(/^invalid_archive sneaky /);
    expect(workspace()).toEqual(before);
  });
});
