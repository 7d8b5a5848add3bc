// A copy of this working tree with one tool more, `move` (issue 19's
// acceptance): the two edits a new tool needs — its descriptor entry in
// services/protocol/tools.ts and its function in the executor's TOOLS map —
// and nothing else. Each edit is a text patch that must apply exactly once,
// so a change of either file's shape fails here loudly instead of testing
// an unpatched copy.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const ROOT = new URL('../../../', import.meta.url).pathname;

const MOVE_DESCRIPTOR = `  move: {
    judged: 'paths', summary: 'Move or rename a file or directory (parents of dest are created).', verb: 'Move',
    attributes: [path('write'), { name: 'dest', kind: 'path', required: true, access: 'write', describe: 'destination path' }],
    body: 'none', result: 'optional', defaultDecision: 'allow', risk: 'medium',
    done: () => 'moved',
    example: { id: 9, attrs: { path: 'old.txt', dest: 'new.txt' } },
  },
`;

const MOVE_FUNCTION = `
// Added by test/integration/tool-descriptor: a rename inside the workspace (mv semantics).
export async function move(cmd) {
  if (isEmpty(cmd.dest)) throw new ToolError('bad_request', 'move needs dest');
  const src = await resolveInside(cmd.path);
  const srcStat = await statOrNull(src);
  if (!srcStat) throw new ToolError('not_found', \`\${cmd.path}: no such file or directory\`);
  let dest = await resolveInside(cmd.dest);
  const destStat = await statOrNull(dest);
  if (destStat && destStat.isDirectory()) dest = await resolveInside(path.join(dest, path.basename(src)));
  if (dest === src) throw new ToolError('bad_request', 'source and destination are the same');
  if (srcStat.isDirectory() && dest.startsWith(src + '/')) throw new ToolError('bad_request', 'cannot move a directory into itself');
  mkdirSync(path.dirname(dest), { recursive: true });
  renameSync(src, dest);
  return {};
}
`;

/** Replaces the one match of `anchor` in `file` (relative to `root`); throws unless there is exactly one. */
function patch(root: string, file: string, anchor: RegExp, replace: (match: string, ...groups: string[]) => string): void {
  const full = join(root, file);
  const text = readFileSync(full, 'utf8');
  const matches = [...text.matchAll(new RegExp(anchor.source, `${anchor.flags.replace('g', '')}g`))];
  if (matches.length !== 1) throw new Error(`patch of ${file}: anchor ${anchor} matched ${matches.length} times, expected exactly once`);
  writeFileSync(full, text.replace(anchor, replace as (substring: string, ...args: any[]) => string));
}

/** The paths git tracks, as they are in the working tree (uncommitted edits included, deleted files left out). */
function trackedFiles(): string[] {
  const list = (...args: string[]) => execFileSync('git', ['ls-files', '-z', ...args], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  const deleted = new Set(list('--deleted'));
  return list('--cached').filter((f) => !deleted.has(f));
}

/** A temporary copy of the tree with the `move` tool added; node_modules is a link to this tree's. */
export function copyWithMoveTool(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tf-move-tool-'));
  for (const file of trackedFiles()) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dir, file), { verbatimSymlinks: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  patch(dir, 'services/protocol/tools.ts', /\n(\} as const satisfies Record<string, ToolDescriptor>;)/, (_m, end) => `\n${MOVE_DESCRIPTOR}${end}`);
  patch(dir, 'sandbox-image/executor/file-tools.mjs', /export const TOOLS = \{([^}]*)\};\n/, (m, names) => `export const TOOLS = {${names.trimEnd()}, move };\n${MOVE_FUNCTION}`);
  return dir;
}
