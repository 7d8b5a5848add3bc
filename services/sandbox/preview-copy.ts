import type Docker from 'dockerode';
import { PassThrough, Transform, type Duplex, type Readable, type TransformCallback } from 'node:stream';
import type { ResolvedSandboxOptions } from './sandbox-options.ts';
import { asCommandUser } from './workspace-upload.ts';

// The copy of a preview (preview.ts): the session's workspace as its
// archive (workspace-out.ts, tar in the session's container, as root, so
// unreadable files are copied too) streamed into `tar -x` in the preview's
// container as the command user, like every command. Extracting as that
// user keeps the copy's files the user's (the archive names owner 0, and
// commands must be able to change the copy as they could the original) and
// puts nothing where a command could not write itself. Counted on the way:
// past the limit the copy stops (`workspace_too_large`), so a preview never
// holds more than the limit of a workspace, whatever the quota.

export type PreviewRefusalCode = 'workspace_too_large' | 'previews_busy' | 'preview_timeout' | 'copy_failed';

/** A preview that could not be made; `code` says why, the message in words an operator reads. */
export class PreviewRefused extends Error {
  constructor(readonly code: PreviewRefusalCode, message: string) {
    super(message);
    this.name = 'PreviewRefused';
  }
}

const EXIT_WAIT_MS = 10_000;
const STDERR_TAIL = 2000;

class Counter extends Transform {
  bytes = 0;
  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      const mib = Math.round(this.limit / 1024 / 1024);
      return cb(new PreviewRefused('workspace_too_large', `the workspace is larger than the preview limit of ${mib} MiB (THINKFLOW_PREVIEW_MAX_WORKSPACE_MB); it is not copied`));
    }
    cb(null, chunk);
  }
}

/** Streams `archive` (a tar) into the container's /workspace; resolves with the bytes copied. @throws PreviewRefused */
export async function copyInto(
  docker: Docker, container: Docker.Container, archive: Readable,
  o: { options: Pick<ResolvedSandboxOptions, 'user'>; limitBytes: number; signal: AbortSignal },
): Promise<number> {
  const exec = await container.exec({
    Cmd: asCommandUser(o.options, ['tar', '-x', '-p', '-f', '-', '-C', '/workspace']), User: '0:0', WorkingDir: '/workspace', Env: [],
    AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false,
  });
  const socket = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
  const out = new PassThrough();
  let stderr = '';
  out.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-STDERR_TAIL); });
  docker.modem.demuxStream(socket, out, out);
  const counter = new Counter(o.limitBytes);
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => reject(err);
      const abort = () => reject(o.signal.reason instanceof Error ? o.signal.reason : new Error(String(o.signal.reason)));
      if (o.signal.aborted) return abort();
      o.signal.addEventListener('abort', abort, { once: true });
      archive.once('error', fail);
      counter.once('error', fail);
      socket.once('error', fail);
      // Docker's demuxer never ends its outputs: the socket's end is the program's.
      socket.once('end', () => resolve());
      socket.once('close', () => resolve());
      counter.once('end', () => socket.end());
      archive.pipe(counter).pipe(socket, { end: false });
    });
  } finally {
    archive.destroy();
    socket.destroy();
  }
  const code = await exitCode(exec);
  if (code !== 0) throw new PreviewRefused('copy_failed', `copying the workspace failed (tar exited with ${code}): ${stderr.trim().slice(-500) || 'no message'}`);
  return counter.bytes;
}

async function exitCode(exec: Docker.Exec): Promise<number | null> {
  const until = Date.now() + EXIT_WAIT_MS;
  for (;;) {
    const info = await exec.inspect();
    if (!info.Running) return info.ExitCode ?? null;
    if (Date.now() > until) return null;
    await new Promise((r) => setTimeout(r, 20));
  }
}
