import { statSync, type Stats } from 'node:fs';
import { chmod, mkdir, readdir, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { containerName } from './names.ts';

/**
 * Where a session's egress directory is mounted in its container. The
 * image makes /var/lib/thinkflow root's with mode 0700, so only the executor
 * (root) reaches the socket; its relay (sandbox-image/executor/egress-relay.mjs)
 * opens the directory once as root and dials `${EGRESS_SOCKET_NAME}` through
 * that descriptor with the command user's ids.
 */
export const EGRESS_MOUNT = '/var/lib/thinkflow/egress';
export const EGRESS_SOCKET_NAME = 'egress.sock';

// sockaddr_un.sun_path holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH = 107;
// The longest id the service makes (services/pipeline/sessions.ts: ses_ + 32 hex).
const SERVICE_ID_EXAMPLE = `ses_${'0'.repeat(32)}`;

export type EgressDirInfo = { slug: string; dir: string; mtimeMs: number };

/** Host path of a session's egress directory: `<root>/<prefix><slug>`, the container's name. */
export function egressHostDir(root: string, namePrefix: string, sessionId: string): string {
  return path.join(path.resolve(root), containerName(namePrefix, sessionId));
}

/** Mode of a session's directory: searchable by the relay's unprivileged ids, listable by nobody but root. */
export const SESSION_DIR_MODE = 0o711;

/**
 * Refuses a root directory other users can enter: the sessions' directories
 * in it are 0711 and their sockets 0666 (what the in-container relay needs),
 * so the root's own 0700, and its being this service's, is what keeps the
 * host's other users out (the owner of a 0700 directory enters, lists and
 * renames in it whatever its mode says).
 */
function checkRoot(root: string, st: { mode: number; uid: number }): void {
  if ((st.mode & 0o077) !== 0) {
    throw new Error(`egress directory ${root} is mode 0${(st.mode & 0o777).toString(8)}: THINKFLOW_EGRESS_DIR must be root's alone (0700), since the sessions' proxy sockets in it are open to any user who can reach them`);
  }
  const self = process.geteuid?.();
  if (self !== undefined && st.uid !== self) {
    throw new Error(`egress directory ${root} is owned by uid ${st.uid}, not this service's (uid ${self}): THINKFLOW_EGRESS_DIR must be the service's alone (0700), since the sessions' proxy sockets in it are open to any user who can reach them`);
  }
}

/**
 * The root's stat, or nothing when it does not exist or this process cannot
 * reach it: the API role makes a manager too and needs neither root nor the
 * directory, and a process that cannot reach it exposes nothing in it (a
 * worker that cannot is told by prepare()).
 */
function statIfReachable(root: string): Stats | undefined {
  try {
    return statSync(root, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EACCES') return undefined;
    throw err;
  }
}

/**
 * The per-session directories, on the worker host, that hold each session's
 * egress proxy socket (made by the proxy, services/sandbox/egress/). Each is
 * mode 0711 inside a root directory of mode 0700, made before its container is created (a bind mount's source must
 * exist) and removed with its session; its mtime is the last time a container
 * of the session was opened or paused, which the reaper reads as for workspace images.
 */
export class EgressDirs {
  readonly #root: string;
  readonly #prefix: string;

  constructor(o: { dir: string; namePrefix: string }) {
    this.#root = path.resolve(o.dir);
    this.#prefix = o.namePrefix;
    // Said at start-up, not at a session's first command: every session would fail alike.
    // executor.sock (executor-socket.ts) is the longer of the two names in the directory.
    const longest = path.join(this.dirOf(SERVICE_ID_EXAMPLE), 'executor.sock');
    if (Buffer.byteLength(longest) > MAX_SOCKET_PATH) {
      throw new Error(`egress directory ${this.#root} is too long for a Unix socket path (${longest} exceeds ${MAX_SOCKET_PATH} bytes): set THINKFLOW_EGRESS_DIR to a shorter path`);
    }
    const st = statIfReachable(this.#root);
    if (st) checkRoot(this.#root, st);
  }

  dirOf(sessionId: string): string {
    return egressHostDir(this.#root, this.#prefix, sessionId);
  }

  socketPath(sessionId: string): string {
    return path.join(this.dirOf(sessionId), EGRESS_SOCKET_NAME);
  }

  /** Makes the session's directory (idempotent) and returns the socket path the proxy listens on. */
  async prepare(sessionId: string): Promise<string> {
    const socket = this.socketPath(sessionId);
    if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) throw new Error(`egress socket path of session ${sessionId} is too long (${socket})`);
    await mkdir(this.#root, { recursive: true, mode: 0o700 });
    checkRoot(this.#root, await stat(this.#root));
    const dir = this.dirOf(sessionId);
    await mkdir(dir, { mode: SESSION_DIR_MODE }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    // mkdir's mode passes through the umask, and a directory left from before keeps whatever it had.
    await chmod(dir, SESSION_DIR_MODE);
    const now = new Date();
    await utimes(dir, now, now);
    return socket;
  }

  /**
   * Sets the directory's mtime to now: its session was in use until now
   * (its container is being paused, idle-pause.ts). A paused executor cannot
   * tell another process's reaper when it was last used; this can.
   */
  async mark(sessionId: string): Promise<void> {
    const now = new Date();
    await utimes(this.dirOf(sessionId), now, now);
  }

  /** The directory's mtime (its container's last open or pause on this host), or undefined when there is none. */
  async markedAt(sessionId: string): Promise<number | undefined> {
    const st = await stat(this.dirOf(sessionId)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    return st?.mtimeMs;
  }

  /** Removes the session's directory and the socket in it; nothing there is an error. */
  async remove(sessionId: string): Promise<void> {
    await rm(this.dirOf(sessionId), { recursive: true, force: true });
  }

  /** Directories of this name prefix, by session slug. */
  async list(): Promise<EgressDirInfo[]> {
    let names: string[];
    try {
      names = await readdir(this.#root);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: EgressDirInfo[] = [];
    for (const name of names.filter((n) => n.startsWith(this.#prefix))) {
      const dir = path.join(this.#root, name);
      const st = await stat(dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null; // removed meanwhile
        throw err;
      });
      if (st?.isDirectory()) out.push({ slug: name.slice(this.#prefix.length), dir, mtimeMs: st.mtimeMs });
    }
    return out;
  }

  /** Removes a listed directory (the reaper's). */
  async removeDir(dir: string): Promise<void> {
    await rm(dir, { recursive: true, force: true });
  }
}
