// `thinkflow policy check` end to end: the real bin, temp policy dirs, exact
// output line and exit codes (API.md CLI, POLICY.md §6).
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/thinkflow.mjs');

type Run = { code: number | null; stdout: string; stderr: string };

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'policy', ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function onlyLine(r: Run): unknown {
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout.split('\n');
  expect(lines).toHaveLength(2); // one JSON line and its newline
  expect(lines[1]).toBe('');
  return JSON.parse(lines[0]!);
}

let base: string;
async function dir(name: string, files: Record<string, string>): Promise<string> {
  const d = join(base, name);
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(join(d, rel, '..'), { recursive: true });
    await writeFile(join(d, rel), text);
  }
  return d;
}

const GLOBAL = `version: 1
rules:
  - id: git-readonly
    tool: bash
    command: ["git", ["status", "diff"]]
    decision: allow
    justification: read-only git
  - id: rm-root
    tool: bash
    command: ["rm", "-rf", "/"]
    decision: forbid
    justification: whole-tree delete
  - id: protect-git-dir
    tool: [write, copy]
    path: ".git/**"
    decision: forbid
`;

let good: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'tf-policy-cli-'));
  good = await dir('good', {
    'global/base.yaml': GLOBAL,
    'projects/web/web.yaml': 'version: 1\nrules:\n  - {id: web-no-diff, tool: bash, command: [git, diff], decision: prompt, justification: web says ask}\n',
  });
  await writeFile(join(base, 'session.yaml'), 'version: 1\nrules:\n  - {id: s-no-status, tool: bash, command: [git, status], decision: forbid}\n');
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('thinkflow policy check: output', () => {
  it('prints exactly one JSON line with decision, matched_rules (looser ones too) and reason', async () => {
    const out = onlyLine(await run(['check', '--policy-dir', good, '--cmd', 'git status && rm -rf /']));
    expect(Object.keys(out as object)).toEqual(['decision', 'matched_rules', 'reason']);
    expect(out).toEqual({
      decision: 'forbid',
      matched_rules: [
        { id: 'git-readonly', layer: 'global', decision: 'allow', justification: 'read-only git' },
        { id: 'rm-root', layer: 'global', decision: 'forbid', justification: 'whole-tree delete' },
        // `rm -rf /` deletes the workspace too: its path argument meets the path rules (§7).
        { id: 'protect-git-dir', layer: 'global', decision: 'forbid', justification: '' },
      ],
      reason: expect.stringContaining('rm-root'),
    });
  });

  it('uses the project and session layers; exit 0 for prompt and forbid alike', async () => {
    const project = onlyLine(await run(['check', '--policy-dir', good, '--project', 'web', '--cmd', 'git diff']));
    expect(project).toMatchObject({
      decision: 'prompt',
      matched_rules: [
        { id: 'git-readonly', layer: 'global', decision: 'allow' },
        { id: 'web-no-diff', layer: 'project', decision: 'prompt', justification: 'web says ask' },
      ],
    });
    const session = onlyLine(await run(['check', '--policy-dir', good, '--session-rules', join(base, 'session.yaml'), '--cmd', 'git status']));
    expect(session).toMatchObject({ decision: 'forbid', matched_rules: [{ id: 'git-readonly' }, { id: 's-no-status', layer: 'session', justification: '' }] });
  });

  it('file tools: globs, copy dest, and the workspace invariant', async () => {
    const [git, copy, outside, absolute] = await Promise.all([
      run(['check', '--policy-dir', good, '--tool', 'write', '--path', '.git']),
      run(['check', '--policy-dir', good, '--tool', 'copy', '--path', 'a.txt', '--dest', '.git/x']),
      run(['check', '--policy-dir', good, '--tool', 'read', '--path', '../x']),
      run(['check', '--policy-dir', good, '--tool', 'read', '--path', '/etc/passwd']),
    ]);
    expect(onlyLine(git)).toMatchObject({ decision: 'forbid', matched_rules: [{ id: 'protect-git-dir' }] });
    expect(onlyLine(copy)).toMatchObject({ decision: 'forbid', matched_rules: [{ id: 'protect-git-dir' }] });
    for (const r of [outside, absolute]) {
      const line = onlyLine(r) as { decision: string; reason: string; matched_rules: unknown[] };
      expect(line.decision).toBe('forbid');
      expect(line.reason).toContain('path_outside_workspace');
      expect(line.matched_rules).toEqual([]);
    }
  });

  it('a redirection into .git/ is a forbidden write, with the rule named (POLICY.md §7)', async () => {
    const out = onlyLine(await run(['check', '--policy-dir', good, '--cmd', 'echo "[core] hooksPath = h" >> .git/config 2>/dev/null']));
    expect(out).toEqual({
      decision: 'forbid',
      matched_rules: [{ id: 'protect-git-dir', layer: 'global', decision: 'forbid', justification: '' }],
      reason: 'forbid by rule protect-git-dir (global) for write of .git/config (redirection)',
    });
  });

  it('complex scripts get the complex_command default; THINKFLOW_POLICY_DIR is the default dir', async () => {
    const out = onlyLine(await run(['check', '--cmd', 'echo $(whoami)'], { THINKFLOW_POLICY_DIR: good }));
    expect(out).toMatchObject({ decision: 'prompt', matched_rules: [] });
  });
});

describe('thinkflow policy check: exit 2', () => {
  it.each<[string, Record<string, string>, RegExp]>([
    ['bad YAML', { 'global/bad.yaml': 'version: 1\nrules: [\n' }, /global\/bad\.yaml: YAML error/],
    ['unknown field', { 'global/typo.yaml': 'version: 1\nrules:\n  - {id: t, tool: bash, command: [ls], decision: allow, justificaton: x}\n' }, /global\/typo\.yaml: rules\[0\] \(t\): Unrecognized key: "justificaton"/],
    ['failing example', { 'global/ok.yaml': GLOBAL, 'projects/x/ex.yaml': 'version: 1\nrules:\n  - {id: a, tool: bash, command: [ls], decision: allow}\n  - {id: e, tool: bash, command: [git], decision: allow, examples: {not_match: ["git push"]}}\n' }, /projects\/x\/ex\.yaml: rules\[1\] \(e\): example "git push" is listed in not_match/],
  ])('%s anywhere in the policy dir', async (name, files, message) => {
    const d = await dir(name.replace(/ /g, '-'), files);
    const r = await run(['check', '--policy-dir', d, '--cmd', 'ls']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it.each<[string, string[], RegExp]>([
    ['unknown project', ['--project', 'nope', '--cmd', 'ls'], /unknown project 'nope'/],
    ['bad session rules', ['--session-rules', '/nonexistent.yaml', '--cmd', 'ls'], /cannot read session rules/],
    ['no command', [], /give --cmd/],
    ['unknown option', ['--cmd', 'ls', '--verbose'], /unknown option/],
    ['unknown tool', ['--tool', 'shell', '--path', 'x'], /unknown tool/],
    ['file tool without path', ['--tool', 'write'], /needs --path/],
    ['copy without dest', ['--tool', 'copy', '--path', 'a'], /needs --dest/],
    ['cmd and path together', ['--cmd', 'ls', '--path', 'a'], /--path\/--dest are for file tools/],
  ])('%s', async (_name, args, message) => {
    const r = await run(['check', '--policy-dir', good, ...args]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it('a missing policy dir and an unknown subcommand', async () => {
    const [missing, sub] = await Promise.all([
      run(['check', '--policy-dir', join(base, 'nothing-here'), '--cmd', 'ls']),
      run(['evaluate', '--cmd', 'ls']),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/policy directory not found/);
    expect(sub.code).toBe(2);
  });
});
