// Redirections are file operations (POLICY.md §7), and so are the path
// arguments of path-aware commands (`mv`, `sed -i`, `tar -x -C` …, read by
// file-commands/): `echo x >> .git/config`
// writes .git/config just as a `write` tool call would, so each redirection
// target in the workspace is checked as a `write` (output) or a `read`
// (input) under the path rules. Targets outside the workspace (/dev/null,
// /tmp/…) and descriptor duplications (`2>&1`) are the sandbox's business.
//
// Relative targets are relative to the shell's working directory, which a
// `cd` earlier in the script moves (even out of the workspace and back):
// every directory a literal `cd` may have reached is tried (a `cd` can fail, so the start stays possible too), and
// a target after a `cd` that cannot be read makes the script complex.
import { normalizeWorkspacePath, WORKSPACE_ROOT } from './path.ts';
import { splitScript, type SimpleCommand } from './shell-split.ts';
import type { Word } from './shell-lexer.ts';
import { newWrapBudget, unwrap } from './wrappers.ts';
import { commandTargets, isPathAware } from './file-commands/index.ts';
import { FILE_OP_STEPS, newBudget, spend, type Budget } from './budget.ts';

/**
 * A workspace file a command touches. `via: 'operand'`: a path argument of a
 * path-aware command (file-commands/), with its scope — `tree` the path and
 * everything under it, `some` unknown entries under it (`dotOk`: they may
 * start with a dot); absent: a redirection, or the path itself.
 */
export type FileOp = { tool: 'write' | 'read'; path: string; via?: 'operand'; scope?: 'tree' | 'some'; dotOk?: boolean };
export type FileOps = { ops: FileOp[]; complex?: string };

const OUTPUT = new Set(['>', '>>', '>|', '&>', '&>>', '>&']);
const CHDIR = new Set(['cd', 'pushd', 'popd']);
/** Characters that make a target a pathname pattern the shell may expand to another file. */
const GLOB_CHARS = /[*?[]/;
const MAX_CWDS = 16;

/**
 * The workspace files a bash script's redirections write or read, as
 * normalised workspace paths (several per target when a `cd` makes the
 * working directory uncertain), including those of scripts run through
 * wrappers (`bash -c`). Pure; used by the engine and by the worker's
 * execution-time check on resolved paths.
 * @example redirectFileOps('echo x >> .git/config 2>/dev/null') // [{ tool: 'write', path: '.git/config' }]
 */
export function redirectFileOps(cmd: string): FileOp[] {
  const simple = splitScript(cmd).simple;
  // Scripts run through wrappers (`bash -c "echo x > f"`) redirect too.
  const budget = newWrapBudget();
  const nested = simple.flatMap((c) => unwrap(c.argv, budget).commands);
  return fileOpsOf([...simple, ...nested], budget.steps).ops.filter((o) => o.via === undefined);
}

/** Whether fileOpsOf has anything to read in these commands (most scripts: nothing). */
export function touchesFiles(commands: readonly SimpleCommand[]): boolean {
  return commands.some((c) => c.redirs.length > 0 || (c.argv.length > 0 && isPathAware(c.argv[0]!)));
}

const PROCESS_LINK = /^\/(proc|dev\/fd)(\/|$)/;

/** File operations of simple commands in script order; `complex` when a target cannot be known from the text. */
export function fileOpsOf(commands: readonly SimpleCommand[], budget: Budget = newBudget()): FileOps {
  const ops: FileOp[] = [];
  const seen = new Set<string>();
  let cwds: string[] | null = [WORKSPACE_ROOT];
  let complex: string | undefined;
  for (const c of commands) {
    // Every target is resolved against every possible working directory, then matched: paid up front.
    const targets = c.redirs.length + (c.argv.length > 0 && isPathAware(c.argv[0]!) ? c.argv.length : 0);
    if (targets > 0 && !spend(budget, targets * FILE_OP_STEPS * (cwds?.length ?? 1))) { complex ??= budget.over; break; }
    for (const r of c.redirs) {
      const tools = toolsOf(r.op, r.target);
      if (tools.length === 0) continue;
      const why = unreadableTarget(r.target);
      if (why) { complex ??= why; continue; }
      const t = r.target.text;
      // /proc/<pid>/cwd, /proc/self/root/workspace/… and /dev/fd/N name
      // workspace files by another path: what they reach cannot be read here.
      if (PROCESS_LINK.test(t.replace(/\/{2,}/g, '/'))) { complex ??= `redirection through a process link (${t})`; continue; }
      if (!t.startsWith('/') && cwds === null) { complex ??= 'relative redirection target after a cd that cannot be followed'; continue; }
      for (const base of t.startsWith('/') ? [''] : cwds!) {
        const n = normalizeWorkspacePath(t.startsWith('/') ? t : `${base}/${t}`);
        if (!n.ok) continue; // outside the workspace: left to the sandbox
        for (const tool of tools) {
          const key = `${tool}\0${n.path}`;
          if (!seen.has(key)) { seen.add(key); ops.push({ tool, path: n.path }); }
        }
      }
    }
    if (c.argv.length > 0 && isPathAware(c.argv[0]!)) complex ??= operandOps(c, cwds, ops, seen);
    if (CHDIR.has(c.argv[0] ?? '')) cwds = chdir(cwds, c);
  }
  return complex === undefined ? { ops } : { ops, complex };
}

/** The write targets of a path-aware command's arguments, resolved against every possible working directory; the reason when they cannot be known. */
function operandOps(c: SimpleCommand, cwds: string[] | null, ops: FileOp[], seen: Set<string>): string | undefined {
  const t = commandTargets(c.words);
  for (const target of t.targets) {
    const rel = !target.path.startsWith('/');
    if (rel && cwds === null) return 'relative path argument after a cd that cannot be followed';
    if (PROCESS_LINK.test(target.path.replace(/\/{2,}/g, '/'))) return `path argument through a process link (${target.path})`;
    for (const base of rel ? cwds! : ['']) {
      const abs = absolute(rel ? `${base}/${target.path}` : target.path);
      // A tree or extraction at `/` reaches the workspace too.
      const n = abs === '/' && target.scope !== 'self' ? { ok: true as const, path: '.' } : normalizeWorkspacePath(abs);
      if (!n.ok) continue; // outside the workspace: left to the sandbox
      const op: FileOp = { tool: 'write', path: n.path, via: 'operand' };
      if (target.scope !== 'self') op.scope = target.scope;
      if (target.scope === 'some') op.dotOk = target.dotOk || abs === '/';
      const key = `o\0${target.scope}\0${op.dotOk === true}\0${n.path}`;
      if (!seen.has(key)) { seen.add(key); ops.push(op); }
    }
  }
  return t.complex;
}

/** `>&2`, `2>&1`, `<&0`, `>&-` duplicate or close descriptors; `>&file` is `&>file`. */
function toolsOf(op: string, target: Word): ('write' | 'read')[] {
  const base = op.replace(/^[0-9]+/, '');
  if ((base === '>&' || base === '<&') && /^([0-9]+-?|-)$/.test(target.text) && !target.quoted) return [];
  if (base === '<>') return ['read', 'write'];
  if (OUTPUT.has(base)) return ['write'];
  if (base === '<' || base === '<&') return ['read'];
  return [];
}

function unreadableTarget(w: Word): string | undefined {
  if (w.expanded) return 'expansion in a redirection target';
  if (GLOB_CHARS.test(w.text)) return 'pattern in a redirection target';
  return undefined;
}

/** Working directories possible after a `cd`; null once one cannot be known. */
function chdir(cwds: string[] | null, c: SimpleCommand): string[] | null {
  if (cwds === null || c.argv[0] === 'popd') return null;
  const k = c.words.findIndex((w, i) => i > 0 && !(w.text.startsWith('-') && w.text.length > 1 && !w.quoted));
  const arg = k < 0 ? undefined : c.words[k]!;
  if (!arg || arg.expanded || arg.text === '-' || arg.text === '') return null;
  const next = new Set(cwds);
  for (const base of arg.text.startsWith('/') ? [''] : cwds) next.add(absolute(arg.text.startsWith('/') ? arg.text : `${base}/${arg.text}`));
  return next.size > MAX_CWDS ? null : [...next];
}

/** `/a/./b/../c` → `/a/c`; `..` above the root stays at the root, as the kernel does. */
function absolute(p: string): string {
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return `/${out.join('/')}`;
}
