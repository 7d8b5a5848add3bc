import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sandboxLog } from './log.ts';

// The service's side of host-tool-runner.mjs: host tools are started by that
// small process, not forked from this one (a fork held this event loop ~7 ms
// per tool, whatever this process's size). One runner per process, started on
// the first call, kept referenced only while a call is pending (so an idle
// runner never keeps the service alive), and started again after it dies:
// every call it had pending fails, none is lost silently.

const RUNNER = fileURLToPath(new URL('./host-tool-runner.mjs', import.meta.url)); // a path with blanks too
/** A runner that answers nothing this long past a call's own time limit is taken for hung and killed. */
const GRACE_MS = 5_000;

export type ToolOutcome = { stdout: string; stderr: string; error: null | { message: string; code: string | number | null; signal: string | null; killed: boolean } };
type Pending = { resolve: (o: ToolOutcome) => void; reject: (err: Error) => void; timer: NodeJS.Timeout; child: ChildProcess };

export class HostToolRunner {
  #child: ChildProcess | null = null;
  readonly #pending = new Map<number, Pending>();
  #seq = 0;

  /** Starts `file args…` in the runner; resolves with what it printed and how it ended (never rejects for the tool's own failure). */
  run(file: string, args: string[], timeoutMs: number, maxBuffer: number): Promise<ToolOutcome> {
    const child = this.#started();
    const id = ++this.#seq;
    return new Promise<ToolOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        sandboxLog().error({ file, args, timeoutMs }, 'host tool runner did not answer within the tool\'s time limit; it is killed and started again');
        this.#pending.delete(id);
        reject(new Error(`host tool runner did not answer ${file} within ${timeoutMs + GRACE_MS} ms`));
        this.#fail(child, new Error('host tool runner killed: it stopped answering'));
        child.kill('SIGKILL');
      }, timeoutMs + GRACE_MS);
      this.#pending.set(id, { resolve, reject, timer, child });
      this.#hold();
      child.stdin?.write(`${JSON.stringify({ id, file, args, timeoutMs, maxBuffer })}\n`);
    });
  }

  /** The runner's pid while one runs (diagnostics, tests). */
  get pid(): number | undefined { return this.#child?.pid; }

  /** Ends the runner (tests; the service's runner ends with it, its stdin closing). */
  close(): void {
    this.#child?.stdin?.end();
  }

  #started(): ChildProcess {
    if (this.#child) return this.#child;
    // Plain JavaScript: no flags or loaders of this process (a preload writing to stdout would corrupt the answers).
    const { NODE_OPTIONS: _options, ...env } = process.env;
    const child = spawn(process.execPath, [RUNNER], { stdio: ['pipe', 'pipe', 'inherit'], env });
    this.#child = child;
    // First, before anything can throw: a spawn that failed (EMFILE, ENOENT) is reported here, on the next tick.
    child.on('error', (err) => {
      sandboxLog().error({ err }, 'host tool runner failed (could not start, or could not be written to)');
      this.#fail(child, new Error(`host tool runner failed: ${err.message}`));
    });
    child.once('exit', (code, signal) => this.#fail(child, new Error(`host tool runner exited (${signal ?? code}) with the call pending`)));
    if (!child.stdin || !child.stdout) return child; // no pipes (out of descriptors): the error above fails the call
    createInterface({ input: child.stdout }).on('line', (line) => this.#answer(line));
    // A write to a runner that just died: the exit fails the call; without a listener the error would end the service.
    child.stdin.on('error', (err) => sandboxLog().warn({ err }, 'host tool runner\'s stdin failed; its pending calls fail'));
    this.#release();
    return child;
  }

  /** The runner is unusable: the next call starts another; every call pending on it (not on a newer one) fails. */
  #fail(child: ChildProcess, err: Error): void {
    if (this.#child === child) this.#child = null;
    for (const [id, p] of this.#pending) {
      if (p.child !== child) continue;
      clearTimeout(p.timer);
      p.reject(err);
      this.#pending.delete(id);
    }
  }

  #answer(line: string): void {
    let msg: ToolOutcome & { id: number };
    try {
      msg = JSON.parse(line) as ToolOutcome & { id: number };
    } catch (err) {
      sandboxLog().error({ err, bytes: line.length }, 'host tool runner sent a line that is not JSON');
      return;
    }
    const p = this.#pending.get(msg.id);
    if (!p) return;
    this.#pending.delete(msg.id);
    clearTimeout(p.timer);
    if (this.#pending.size === 0) this.#release();
    p.resolve({ stdout: msg.stdout, stderr: msg.stderr, error: msg.error });
  }

  // Referenced while a call waits (the caller's promise alone would not keep the process alive), not otherwise.
  #hold(): void {
    this.#child?.ref();
    (this.#child?.stdout as { ref?: () => void } | null)?.ref?.();
  }

  #release(): void {
    this.#child?.unref();
    (this.#child?.stdout as { unref?: () => void } | null)?.unref?.();
    (this.#child?.stdin as { unref?: () => void } | null)?.unref?.();
  }
}
