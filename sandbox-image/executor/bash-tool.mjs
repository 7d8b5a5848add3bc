// `bash --noprofile --norc -c cmd` in the workspace, as the command user with
// no capability, a clean environment and an empty HOME: own process group, wall-clock
// timeout, capped output, workspace quota watchdog (where the kernel does not enforce it). When it ends (or times
// out, or is cancelled) its group is killed and then every other process of
// the command user (setsid escapes included), before the result is sent.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { asRoot, commandEnv, commandPrefix } from './identity.mjs';
import { WORKSPACE, ToolError } from './paths.mjs';
import { utf8Prefix } from './file-tools.mjs';
import { freshHome, HomeNotFresh } from './home.mjs';
import { killStrays, StraysSurvived } from './strays.mjs';

const PIPE_GRACE_MS = 200;
const QUOTA_TICK_MS = 50;

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
export async function runBash(cmd, limits, signal, quota) {
  if (typeof cmd.cmd !== 'string' || cmd.cmd === '') throw new ToolError('bad_request', 'bash needs cmd');
  try {
    await freshHome();
  } catch (err) {
    // A HOME that keeps an earlier command's files must not be handed on; a new container brings a new tmpfs.
    if (err instanceof HomeNotFresh) return { ok: false, error_code: 'sandbox_broken', error: `${err.message}; the sandbox is replaced` };
    throw err;
  }
  const allowed = quota.kernel ? limits.workspaceQuotaBytes : quota.allowance(limits.workspaceQuotaBytes);
  const r = await runGroup(cmd.cmd, limits, signal, quota, allowed);
  try {
    await killStrays();
  } catch (err) {
    // Processes the sweep cannot end: this container cannot be trusted again (the host replaces it).
    if (err instanceof StraysSurvived) return { ...r, ok: false, error_code: 'sandbox_broken', error: `${err.message}; the sandbox is replaced` };
    throw err;
  }
  // Watchdog: writes faster than its tick are caught here. Either way, a
  // command that failed with the workspace full failed for lack of space
  // (ENOSPC, or EFBIG from the file-size limit with SIGXFSZ handled).
  if (r.error_code !== 'workspace_full' && quota.commandHitLimit(r, allowed)) return { ...r, ...quotaFailure(limits, quota) };
  return r;
}

function quotaFailure(limits, quota) {
  const mb = Math.round(limits.workspaceQuotaBytes / 1024 ** 2);
  if (quota.kernel) return { ok: false, error_code: 'workspace_full', error: `workspace full: its ${mb} MiB filesystem has no space or no inode left` };
  return { ok: false, error_code: 'workspace_full', error: `workspace quota of ${mb} MiB exceeded; command stopped` };
}

function runGroup(script, limits, signal, quota, allowed) {
  const timeoutMs = limits.bashTimeoutMs;
  return new Promise((resolve) => {
    const out = new CappedSink(limits.outputCapBytes);
    const err = new CappedSink(limits.outputCapBytes);
    const [file, ...args] = [...commandPrefix(), 'bash', '--noprofile', '--norc', '-c', script];
    const child = asRoot(() =>
      spawn(file, args, {
        cwd: WORKSPACE,
        env: commandEnv(),
        detached: true, // setsid: the command gets its own process group to kill
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    let reason = null; // 'timeout' | 'aborted' | 'workspace_full'
    let exit = null;
    let done = false;
    let open = 2;
    const stop = (why) => {
      if (reason || exit) return;
      reason = why;
      killGroup(child.pid);
    };
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    // Only where the kernel does not enforce the quota (no filesystem per workspace on this host).
    const watchdog = quota.kernel ? undefined : setInterval(() => {
      if (quota.exceeds(allowed, 0, { watchdog: true })) stop('workspace_full');
    }, QUOTA_TICK_MS);
    const onAbort = () => stop('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(watchdog);
      signal?.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve(toResult(exit, reason, limits, out, err, quota));
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

function toResult(exit, reason, limits, out, err, quota) {
  const timeoutMs = limits.bashTimeoutMs;
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
  // RLIMIT_FSIZE (the container's fsize ulimit) stops a single file at the quota.
  if (reason === 'workspace_full' || exit.signal === 'SIGXFSZ') return { ...base, ...quotaFailure(limits, quota) };
  if (exitCode === 0) return { ...base, ok: true };
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exitCode}`;
  return { ...base, ok: false, error_code: exit.signal ? 'killed' : 'nonzero_exit', error: how };
}
