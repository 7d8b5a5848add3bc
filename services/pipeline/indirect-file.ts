import { normalizeWorkspacePath } from '../policy/index.ts';
import { toolOf } from '../protocol/index.ts';
import { withIds } from '../log/index.ts';
import { headUtf8, INDIRECT_BYTES, type IndirectFile } from './approval-context.ts';
import { indirectTarget, type IndirectTarget } from './indirect-target.ts';
import type { Ledger } from './ledger.ts';
import type { LedgerRecord } from './ledger-record.ts';
import type { Sandboxes } from './sandboxes.ts';

// The file a bash command runs, read by the worker from the session's sandbox
// when the command asks an operator (approval-context.ts, `indirect`): its
// content (bounded) and the ledger record that last wrote it. No file (missing,
// a directory, outside, an npm script that is not there) is no `indirect`,
// never an error: the card then shows the command alone.

export type IndirectPorts = { sandboxes: Pick<Sandboxes, 'readPath'>; ledger: Pick<Ledger, 'many'> };

/** Records looked at, back from the command, for the one that wrote the file. */
const WRITER_SCAN = 500;

/** `rec`: the bash command's record; null when its command runs no workspace file. */
export async function readIndirect(p: IndirectPorts, rec: LedgerRecord, cmd: string): Promise<IndirectFile | null> {
  const target = indirectTarget(cmd);
  if (!target) return null;
  const got = await p.sandboxes.readPath(rec.session, target.path);
  if (got.kind !== 'file') {
    if (got.kind === 'unreadable') withIds({ session_id: rec.session, command_id: rec.id }).warn({ path: target.path, reason: got.reason }, 'approval: the file the command runs could not be read; the card shows the command alone');
    return null;
  }
  const file = target.runner === 'npm' ? npmScriptOf(got.bytes, target, rec, await npmrcOf(p, rec)) : { ...headUtf8(got.bytes, INDIRECT_BYTES), bytes: got.bytes.length };
  if (!file) return null;
  const writer = await lastWriter(p, rec, target.path);
  return {
    path: target.path, runner: target.runner, ...(target.script !== undefined ? { script: target.script } : {}), ...file,
    ...(writer ? { written_by_command_id: writer.id, written_by_index: writer.index, written_by_turn: writer.turn } : {}),
  };
}

/** The workspace's `.npmrc` (npm reads it: it can set the shell and the options scripts run with); null when none. */
async function npmrcOf(p: IndirectPorts, rec: LedgerRecord): Promise<string | null> {
  const got = await p.sandboxes.readPath(rec.session, '.npmrc');
  return got.kind === 'file' ? headUtf8(got.bytes, INDIRECT_BYTES).content : null;
}

/**
 * What npm runs for the script: its line of package.json, or, when npm runs more (its `pre` and `post`
 * scripts, a workspace `.npmrc`), each of them in order under a comment naming it. Null when the file is
 * no JSON or has no such script (npm itself then refuses).
 */
function npmScriptOf(bytes: Buffer, target: IndirectTarget, rec: LedgerRecord, npmrc: string | null): Pick<IndirectFile, 'content' | 'bytes' | 'truncated'> | null {
  let pkg: unknown;
  try {
    pkg = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    withIds({ session_id: rec.session, command_id: rec.id }).info({ err }, 'approval: package.json is not JSON; no npm script shown');
    return null;
  }
  const scripts = (pkg as { scripts?: unknown } | null)?.scripts;
  const line = (name: string): string | null => {
    if (typeof scripts !== 'object' || scripts === null || !Object.hasOwn(scripts, name)) return null;
    const v = (scripts as Record<string, unknown>)[name];
    return typeof v === 'string' ? v : null;
  };
  const name = target.script!;
  const main = line(name);
  if (main === null) return null;
  const runs = [`pre${name}`, name, `post${name}`].flatMap((n) => { const l = line(n); return l === null ? [] : [[n, l] as const]; });
  const text = runs.length === 1 && npmrc === null ? main : [
    ...(npmrc !== null ? ['# .npmrc in the workspace (npm reads it: it can change the shell and the options the scripts run with):', ...npmrc.split('\n').map((l) => `#   ${l}`)] : []),
    '# npm runs these scripts of package.json, in this order:',
    ...runs.flatMap(([n, l]) => [`# ${n}`, l]),
  ].join('\n');
  return { ...headUtf8(Buffer.from(text, 'utf8'), INDIRECT_BYTES), bytes: Buffer.byteLength(text, 'utf8') };
}

/** The latest earlier record of the session that succeeded in writing to `path` with a tf-* tool. */
async function lastWriter(p: IndirectPorts, rec: LedgerRecord, path: string): Promise<LedgerRecord | null> {
  const from = Math.max(1, rec.index - WRITER_SCAN);
  const indexes = Array.from({ length: rec.index - from }, (_, i) => from + i);
  const records = await p.ledger.many(rec.session, indexes, false);
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    if (r.status === 'succeeded' && writesTo(r, path)) return r;
  }
  return null;
}

function writesTo(r: LedgerRecord, path: string): boolean {
  return toolOf(r.tool).attributes.some((a) => {
    if (a.kind !== 'path' || a.access !== 'write') return false;
    const raw = r[a.name as 'path' | 'dest'];
    if (!raw) return false;
    const norm = normalizeWorkspacePath(raw);
    return norm.ok && norm.path === path;
  });
}
