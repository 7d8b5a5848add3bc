// `thinkflow submit --workspace DIR|FILE.tar.gz [--session ID]`: the job runs
// on a session whose workspace is the given tree. A directory is packed into
// a tar.gz as it uploads (`.git` included: the repository travels whole); a
// file is sent as it is (`.tar` plain, `.tar.gz`/`.tgz` or gzip magic: gzip).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { ApiClient, JobRequestInput } from '../api-client.ts';
import { ApiError, UsageError } from '../api-client.ts';
import { packDirectory } from '../tar-pack.ts';

export type WorkspaceArgs = { workspace?: string | undefined; session?: string | undefined };
type Archive = { stream: Readable; type: 'application/gzip' | 'application/x-tar' };

async function isGzip(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await fh.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

async function archiveOf(source: string, onSkip: (p: string, why: string) => void): Promise<Archive> {
  const st = await stat(source).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`--workspace ${source}: ${err.code === 'ENOENT' ? 'no such file or directory' : err.message}`);
  });
  if (st.isDirectory()) return { stream: packDirectory(source, onSkip), type: 'application/gzip' };
  if (!st.isFile()) throw new UsageError(`--workspace ${source}: not a directory or an archive file`);
  const gz = /\.(tgz|tar\.gz)$/i.test(source) || (!/\.tar$/i.test(source) && (await isGzip(source)));
  return { stream: createReadStream(source), type: gz ? 'application/gzip' : 'application/x-tar' };
}

/**
 * Sets `request.session_id`: the given session, or a new one (with the job's
 * project and approval mode, which the upload's policy check follows), after
 * uploading the workspace into it. Returns what the upload wrote, or null
 * when nothing was uploaded.
 *
 * With an idempotency key, a retry (the same command after a network error)
 * must land on the same job: the session is created under a key derived from
 * it (the same session again), and an upload refused because the job already
 * runs there is skipped, so the submit replays the original answer.
 */
export async function prepareWorkspace(
  client: ApiClient, w: WorkspaceArgs, request: JobRequestInput, say: (line: string) => void, idempotencyKey?: string,
): Promise<{ files: number; bytes: number } | null> {
  if (w.workspace === undefined) {
    if (w.session !== undefined) request.session_id = w.session;
    return null;
  }
  const archive = await archiveOf(w.workspace, (p, why) => say(`workspace: skipped ${p} (${why})`));
  const sessionKey = idempotencyKey === undefined ? undefined : `workspace-session-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 40)}`;
  const sessionId = w.session ?? (await client.createSession({
    ...(request.project !== undefined ? { project: request.project } : {}),
    ...(request.approval !== undefined ? { approval: request.approval } : {}),
  }, sessionKey)).session_id;
  request.session_id = sessionId;
  try {
    return await client.uploadWorkspace(sessionId, archive.stream, archive.type);
  } catch (err) {
    if (!(idempotencyKey !== undefined && err instanceof ApiError && err.code === 'session_busy')) throw err;
    archive.stream.destroy();
    say(`workspace: session ${sessionId} is busy (the job of this idempotency key already runs there?); not uploaded again`);
    return null;
  }
}
