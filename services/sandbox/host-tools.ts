import { readFile } from 'node:fs/promises';
import { HostToolRunner } from './tool-runner.ts';

// The host programs behind per-session filesystems (losetup, mkfs.ext4,
// debugfs, cp), started with argument arrays and no shell, each with a time
// limit, so a hung tool fails one session instead of holding the process;
// started by a small runner process (tool-runner.ts), not forked from this one.

export const HOST_TOOL_TIMEOUT_MS = 30_000;

export class HostToolError extends Error {
  readonly code = 'host_tool_failed';
  constructor(
    readonly tool: string,
    readonly args: string[],
    readonly stderr: string,
    cause: unknown,
  ) {
    super(`${tool} ${args.join(' ')} failed: ${stderr.trim() || (cause as Error)?.message || String(cause)}`, { cause });
  }
}

const runner = new HostToolRunner();

/** Runs `file args…` and resolves with its stdout; rejects with a HostToolError naming the call and its stderr. */
export async function runHostTool(file: string, args: string[], timeoutMs = HOST_TOOL_TIMEOUT_MS): Promise<string> {
  let out;
  try {
    out = await runner.run(file, args, timeoutMs, 4 * 1024 * 1024);
  } catch (err) {
    throw new HostToolError(file, args, '', err);
  }
  if (out.error) throw new HostToolError(file, args, out.stderr, Object.assign(new Error(out.error.message), out.error));
  return out.stdout;
}

/** Loop devices attached to `file` (normally zero or one). */
export async function loopsOf(file: string): Promise<string[]> {
  const out = await runHostTool('losetup', ['--noheadings', '--output', 'NAME', '--associated', file]);
  return out.split('\n').map((l) => l.trim()).filter(Boolean);
}

/** Attaches `file` to the first free loop device and returns its path. */
export async function attachLoop(file: string): Promise<string> {
  const dev = (await runHostTool('losetup', ['--find', '--show', file])).trim();
  if (!/^\/dev\/loop\d+$/.test(dev)) throw new Error(`losetup attached ${file} to an unexpected device ${JSON.stringify(dev)}`);
  return dev;
}

/** Detaches a loop device; one already gone is fine. A mounted one is freed by the kernel at its unmount (autoclear). */
export async function detachLoop(dev: string): Promise<void> {
  try {
    await runHostTool('losetup', ['--detach', dev]);
  } catch (err) {
    if (err instanceof HostToolError && /No such device|not a loop|No such file/i.test(err.stderr)) return;
    throw err;
  }
}

/** Every attached loop device with its backing file (`(deleted)` marks one whose file was unlinked). */
export async function listLoops(): Promise<{ dev: string; file: string; deleted: boolean }[]> {
  const out = await runHostTool('losetup', ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE']);
  return out.split('\n').flatMap((line) => {
    const m = /^(\/dev\/loop\d+) (.*)$/.exec(line.trim());
    if (!m) return [];
    // --raw escapes blanks as \x20; our image names have none, so the suffix is the marker.
    const back = m[2]!.replace(/\\x20/g, ' ');
    const deleted = back.endsWith(' (deleted)');
    return [{ dev: m[1]!, file: deleted ? back.slice(0, -' (deleted)'.length) : back, deleted }];
  });
}

/** The file behind a loop device (from sysfs, no process started), or null when nothing is attached to it. */
export async function backingFileOf(dev: string): Promise<string | null> {
  const name = /^\/dev\/(loop\d+)$/.exec(dev)?.[1];
  if (!name) throw new Error(`not a loop device: ${JSON.stringify(dev)}`);
  try {
    return (await readFile(`/sys/block/${name}/loop/backing_file`, 'utf8')).replace(/\n$/, '');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
