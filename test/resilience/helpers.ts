import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { containerName } from '../../services/sandbox/index.ts';

// Real `thinkflow serve` child processes for the resilience suite, and the
// bounded waits its tests use: every wait has a limit and names what it waited for.

const ROOT = new URL('../../', import.meta.url).pathname;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `f` until it gives something other than undefined; throws after `timeoutMs`. */
export async function until<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await f();
    if (v !== undefined) return v;
    await sleep(50);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export type Served = {
  child: ChildProcess;
  /** the API's base URL; null for a worker-only process */
  url: string | null;
  /** the process's pid, as `executed_by` names it (`host:pid`) */
  pid: number;
  /** resolves with the exit code (null when killed by a signal) and the time of exit */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  log(): string;
};

/** `thinkflow serve --role <role>` as a child; resolves once it serves (API listening, or worker running). */
export function serveChild(role: 'all' | 'api' | 'worker', env: Record<string, string>, children: ChildProcess[]): Promise<Served> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/thinkflow.mjs'), 'serve', '--role', role, '--port', '0'], {
    cwd: ROOT, env: { ...process.env, ...env, THINKFLOW_ROLE: role }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let log = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
  });
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(log);
      const worker = log.includes('thinkflow worker running');
      if ((role === 'worker' && worker) || (role === 'api' && m) || (role === 'all' && m && worker)) {
        resolve({ child, url: m ? m[1]! : null, pid: child.pid!, exited, log: () => log });
      }
    });
    void exited.then(({ code }) => reject(new Error(`serve --role ${role} exited early (${code}): ${log}`)));
  });
}

/** True once `path` exists and is not empty in the session's container (seen from outside, as root). */
export function fileInSandbox(boxes: string, sid: string, path: string): boolean {
  try {
    execFileSync('docker', ['exec', containerName(boxes, sid), 'test', '-s', `/workspace/${path}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false; // not yet (or no container yet)
  }
}

export type Entry = { id: string; turn: number; status: string; error: string | null; stdout?: string | null; executed_by: string | null };
