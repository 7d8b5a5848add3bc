// `bash -lc cmd` in the workspace: own process group, wall-clock timeout,
// capped output. The timeout, a cancel and the end of the command all kill
// the whole group, so children started in the background die with it.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { WORKSPACE, ToolError } from './paths.mjs';
import { utf8Prefix } from './file-tools.mjs';

// After bash exits, what is left of its process group is killed: background
// jobs do not outlive their command (they would pile up against the pids
// limit, and hold the output pipes open). Processes that left the group on
// purpose (setsid) are not chased; the pids limit still bounds them.
const PIPE_GRACE_MS = 200;

class CappedSink {
  constructor(cap) {
    this.cap = cap;
    this.chunks = [];
    this.size = 0;
    this.truncated = false;
  }
  push(chunk) {
    if (this.size >= this.cap) {
      this.truncated = true;
      return;
    }
    const room = this.cap - this.size;
    if (chunk.length > room) this.truncated = true;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.size += part.length;
  }
  text() {
    return utf8Prefix(Buffer.concat(this.chunks, this.size));
  }
}

function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Runs one bash command. `signal` (an AbortSignal) cancels it.
 * Resolves with the tool result fields; never rejects for a failing command.
 */
export function runBash(cmd, limits, signal) {
  if (typeof cmd.cmd !== 'string' || cmd.cmd === '') throw new ToolError('bad_request', 'bash needs cmd');
  const timeoutMs = limits.bashTimeoutMs;
  return new Promise((resolve) => {
    const out = new CappedSink(limits.outputCapBytes);
    const err = new CappedSink(limits.outputCapBytes);
    const child = spawn('bash', ['-lc', cmd.cmd], {
      cwd: WORKSPACE,
      detached: true, // setsid: the command gets its own process group to kill
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let reason = null; // 'timeout' | 'aborted'
    let exit = null;
    let done = false;
    let open = 2;
    const stop = (why) => {
      if (reason || exit) return;
      reason = why;
      killGroup(child.pid);
    };
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    const onAbort = () => stop('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve(toResult(exit, reason, timeoutMs, out, err));
    };
    const closed = () => {
      if (--open === 0 && exit) finish();
    };
    child.stdout.on('data', (c) => out.push(c)).on('close', closed);
    child.stderr.on('data', (c) => err.push(c)).on('close', closed);
    child.on('error', (e) => {
      exit = { code: 127, signal: null };
      err.push(Buffer.from(String(e.message)));
      finish();
    });
    child.on('exit', (code, sig) => {
      exit = { code, signal: sig };
      killGroup(child.pid);
      if (open === 0) finish();
      else setTimeout(finish, PIPE_GRACE_MS).unref();
    });
    if (signal?.aborted) onAbort();
  });
}

function toResult(exit, reason, timeoutMs, out, err) {
  const exitCode = exit.code ?? 128 + (constants.signals[exit.signal] ?? 0);
  const base = {
    stdout: out.text(),
    stderr: err.text(),
    stdout_truncated: out.truncated,
    stderr_truncated: err.truncated,
    exit_code: exitCode,
  };
  if (reason === 'timeout') {
    return { ...base, ok: false, error_code: 'timeout', error: `timed out after ${timeoutMs / 1000} s; process group killed` };
  }
  if (reason === 'aborted') return { ...base, ok: false, error_code: 'aborted', error: 'cancelled; process group killed' };
  if (exitCode === 0) return { ...base, ok: true };
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exitCode}`;
  return { ...base, ok: false, error_code: exit.signal ? 'killed' : 'nonzero_exit', error: how };
}
