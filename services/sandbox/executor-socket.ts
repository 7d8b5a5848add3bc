import { lstatSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { egressHostDir } from './egress-dirs.ts';
import { ExecutorClient } from './executor-client.ts';
import { logSandboxError, sandboxLog } from './log.ts';

/**
 * The executor's control socket, in the session's directory beside the
 * egress proxy's (the container sees it as /var/lib/thinkflow/egress/executor.sock,
 * sandbox-image/executor/control-channel.mjs). Requests over it skip dockerd
 * and the container's shim, which relay every byte of an attach stream.
 */
export const CONTROL_SOCKET_NAME = 'executor.sock';

/** `socket` (the default) talks over the control socket once the container answers; `attach` keeps dockerd's attach stream. */
export type ExecutorChannel = 'socket' | 'attach';
export const EXECUTOR_CHANNELS = ['socket', 'attach'] as const;

export function controlSocketPath(egressDir: string, namePrefix: string, sessionId: string): string {
  return path.join(egressHostDir(egressDir, namePrefix, sessionId), CONTROL_SOCKET_NAME);
}

// The executor's ping says whether its socket listens (`control`); the few tries cover a connect refused under load.
const ATTEMPTS = 5;
const RETRY_MS = 20;

function dial(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ path: socketPath });
    s.once('connect', () => {
      s.removeListener('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Why a path is not the service's own socket (a link, another file, another owner), or null when it is. */
function notOurSocket(socketPath: string): string | null {
  let st;
  try {
    st = lstatSync(socketPath);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err);
  }
  if (!st.isSocket()) return st.isSymbolicLink() ? 'a symbolic link' : 'not a socket';
  const self = process.geteuid?.();
  return self !== undefined && st.uid !== self ? `owned by uid ${st.uid}` : null;
}

/**
 * A client over the control socket of a container whose executor has just
 * answered on `attached` with `o.instance` and `o.control` (its socket
 * listens), or null when there is none (an executor of an older image, a
 * setup without the session's directory): the caller keeps `attached`. The directory is writable from inside the
 * container (by its root), so what answers on the socket must prove it is the
 * executor that answered on the attach stream: same `instance`, or the socket
 * is dropped.
 */
export async function openControlSocket(
  socketPath: string,
  attached: ExecutorClient,
  o: { sessionId: string; maxFrameBytes: number; instance?: string; control?: boolean; timeoutMs: number },
): Promise<ExecutorClient | null> {
  const log = sandboxLog(o.sessionId);
  if (o.instance === undefined || o.control !== true) return null; // no socket: an older image, or it could not listen (it logged why)
  for (let attempt = 1; attached.alive; attempt++) {
    try {
      const odd = notOurSocket(socketPath);
      if (odd !== null && odd !== 'ENOENT') {
        log.warn({ socketPath, found: odd }, 'executor control socket is not the service\'s own socket; the attach stream carries the requests');
        return null;
      }
      const socket = await dial(socketPath);
      socket.setNoDelay(true);
      const client = new ExecutorClient(socket, null, {
        maxFrameBytes: o.maxFrameBytes,
        sessionId: o.sessionId,
        onError: (err) => logSandboxError(o.sessionId, 'executor control socket failed', err),
      });
      const pong = await client.request<{ instance?: string }>('ping', {}, o.timeoutMs).catch((err: unknown) => {
        client.close();
        throw err;
      });
      if (pong.instance === o.instance) return client;
      client.close();
      log.warn({ socketPath, expected: o.instance, answered: pong.instance ?? null }, 'another executor answered on the control socket; the attach stream carries the requests');
      return null;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (attempt >= ATTEMPTS || (code !== 'ECONNREFUSED' && code !== 'EAGAIN')) {
        log.warn({ err, socketPath }, 'executor control socket not reachable; the attach stream carries the requests');
        return null;
      }
      await new Promise((r) => setTimeout(r, RETRY_MS * attempt));
    }
  }
  return null;
}
