import type Docker from 'dockerode';
import { Transform, type Duplex, type Readable, type TransformCallback } from 'node:stream';

// `docker exec` of one program in a session's container, its stdout handed
// on as a stream with backpressure end to end (the HTTP client's pace
// reaches the program through the socket), never buffered whole. Docker
// multiplexes stdout and stderr on the one connection (8-byte frame
// headers); stderr is kept as a short tail for the error.

const STDERR_TAIL = 8192;
/** Bytes held on each side of the demultiplexer: room for a few frames, so the socket is not paused and resumed per frame. */
const BUFFER_BYTES = 1024 * 1024;
const EXIT_POLL_MS = 20;
const EXIT_WAIT_MS = 10_000;

/** The program ended badly. `code` comes from its last stderr line (`{code, message}`, workspace-out.mjs) when it gave one. */
export class WorkspaceExecError extends Error {
  constructor(readonly code: string, message: string, readonly exitCode: number | null) {
    super(message);
    this.name = 'WorkspaceExecError';
  }
}

/** Splits Docker's multiplexed frames: stdout is passed on, stderr kept as a tail. */
class Demux extends Transform {
  #header = Buffer.alloc(0);
  #left = 0;
  #stream = 0;
  stderr = '';
  /** Settles with the first byte of stdout, or with the end (failed or not) when there was none. */
  readonly started: Promise<void>;
  #start!: { resolve: () => void; reject: (err: Error) => void };

  constructor(private readonly onEnd: () => Promise<void>, highWaterMark: number) {
    super({ readableHighWaterMark: highWaterMark, writableHighWaterMark: highWaterMark });
    this.started = new Promise((resolve, reject) => (this.#start = { resolve, reject }));
    this.once('error', (err: Error) => this.#start.reject(err));
    this.once('close', () => this.#start.reject(new WorkspaceExecError('sandbox_unavailable', 'the program\'s output closed before it ended', null)));
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#left === 0) {
        const need = 8 - this.#header.length;
        this.#header = Buffer.concat([this.#header, chunk.subarray(at, at + need)]);
        at += Math.min(need, chunk.length - at);
        if (this.#header.length < 8) break;
        this.#stream = this.#header[0]!;
        this.#left = this.#header.readUInt32BE(4);
        this.#header = Buffer.alloc(0);
        continue;
      }
      const part = chunk.subarray(at, at + this.#left);
      at += part.length;
      this.#left -= part.length;
      if (this.#stream === 2) this.stderr = (this.stderr + part.toString('utf8')).slice(-STDERR_TAIL);
      else if (part.length > 0) {
        this.push(part);
        this.#start.resolve();
      }
    }
    cb();
  }

  override _flush(cb: TransformCallback): void {
    this.onEnd().then(() => {
      this.#start.resolve();
      cb();
    }, (err: Error) => cb(err));
  }
}

export type ExecOptions = {
  /** Exit codes that are success (tar: 1 = a file changed while it was read). @default [0] */
  okExits?: number[];
  /** Called once when the stream is finished, failed or destroyed. */
  onClose?: () => void;
};

/**
 * Runs `argv` as root in the container and resolves with its stdout once
 * the first byte came (or it ended): a program that fails before writing
 * anything rejects here, so a caller can still answer with an error status.
 * A failure later destroys the stream with the error; destroying the
 * stream ends the program (its output pipe closes).
 */
export async function execStream(container: Docker.Container, argv: string[], opts: ExecOptions = {}): Promise<Readable> {
  const exec = await container.exec({ Cmd: argv, User: '0:0', WorkingDir: '/workspace', AttachStdin: false, AttachStdout: true, AttachStderr: true, Tty: false });
  const socket = (await exec.start({ hijack: true, stdin: false })) as unknown as Duplex;
  const out: Demux = new Demux(() => exitStatus(exec).then((exitCode) => {
    if (!(opts.okExits ?? [0]).includes(exitCode ?? -1)) throw failure(argv, exitCode, out.stderr);
  }), BUFFER_BYTES);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    socket.destroy();
    opts.onClose?.();
  };
  out.once('close', close);
  socket.once('error', (err: Error) => out.destroy(err));
  socket.pipe(out);
  try {
    await out.started;
  } catch (err) {
    out.destroy();
    close();
    throw err;
  }
  return out;
}

/** Runs a program that prints one JSON document (at most `maxBytes`) and parses it. */
export async function execJson<T>(container: Docker.Container, argv: string[], maxBytes = 64 * 1024 * 1024): Promise<T> {
  const out = await execStream(container, argv);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of out as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      out.destroy();
      throw new WorkspaceExecError('output_too_large', `${argv.join(' ')}: answer over ${maxBytes} bytes`, null);
    }
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as T;
}

// The output ends a moment before Docker records the exit code.
async function exitStatus(exec: Docker.Exec): Promise<number | null> {
  const until = Date.now() + EXIT_WAIT_MS;
  for (;;) {
    const info = await exec.inspect();
    if (!info.Running) return info.ExitCode ?? null;
    if (Date.now() > until) throw new WorkspaceExecError('sandbox_timeout', 'the program closed its output but did not exit', null);
    await new Promise((r) => setTimeout(r, EXIT_POLL_MS));
  }
}

function failure(argv: string[], exitCode: number | null, stderr: string): WorkspaceExecError {
  const last = stderr.trim().split('\n').pop() ?? '';
  try {
    const said = JSON.parse(last) as { code?: unknown; message?: unknown };
    if (typeof said.code === 'string' && typeof said.message === 'string') return new WorkspaceExecError(said.code, said.message, exitCode);
  } catch {
    // not the JSON line of workspace-out.mjs (tar, or a crash): the tail itself tells
  }
  return new WorkspaceExecError('sandbox_error', `${argv[0]} exited with ${exitCode}: ${stderr.trim().slice(-500) || 'no message'}`, exitCode);
}
