// The executor's control channels: JSON lines, one request or response per line.
// Two carry them: the container's attached stdin/stdout (the first channel,
// kept for hosts that attach) and a Unix socket in the session's directory,
// bind-mounted from the worker host (services/sandbox/executor-socket.ts).
// The socket spares every request two copies through dockerd and the
// container's shim, which the attach stream costs.
//
// Commands cannot reach the socket: it lies below /var/lib/thinkflow (root
// only, mode 0700 in the image), and it belongs to the owner of the mounted
// directory (the host's service) with mode 0600. The host checks that the
// executor answering on it is the one it pinged on the attach stream (the
// `instance` of a ping), so a socket replaced in the directory leads nowhere.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { asRoot, RUN_AS } from './identity.mjs';

/**
 * The socket as the container sees it: in the session's directory beside the egress proxy's.
 * THINKFLOW_CONTROL_SOCKET moves it for an executor run outside a container (bench/sandbox/executor-cpu.ts).
 */
export const CONTROL_SOCKET = process.env.THINKFLOW_CONTROL_SOCKET || '/var/lib/thinkflow/egress/executor.sock';

const log = (msg) => process.stderr.write(`executor: control socket: ${msg}\n`);

/**
 * A data handler splitting Buffers on newlines without re-scanning: requests
 * can be megabytes (large writes) and must not be re-read as they grow.
 */
export function lineSplitter(onLine) {
  let pending = [];
  return (chunk) => {
    let start = 0;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, i));
      onLine(pending.length === 1 ? pending[0].toString('utf8') : Buffer.concat(pending).toString('utf8'));
      pending = [];
      start = i + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  };
}

/** The line writer of one channel; a closed channel drops what is written to it (its host went away). */
export function lineWriter(stream) {
  return (msg) => {
    if (!stream.destroyed && stream.writable) stream.write(JSON.stringify(msg) + '\n');
  };
}

/** Runs `fn` with the effective uid `uid` (from root's): the socket is made as its directory's owner. */
function asUser(uid, fn) {
  if (uid === 0) return fn();
  process.seteuid(uid);
  try {
    return fn();
  } finally {
    process.seteuid(0);
  }
}

/**
 * Listens on `socketPath` and calls `onLine(line, send)` for each request of
 * each connection, `send` answering on that connection only. Resolves once
 * listening; resolves without a socket (logged) when the directory is not
 * mounted or not usable, so the attached channel alone still serves.
 *
 * The socket is bound as the directory's owner (the host's service; root in
 * the container has no CAP_DAC_OVERRIDE to write in another uid's directory)
 * and left to it alone (0600). A directory of the command user is refused:
 * its socket would be the commands' too.
 */
export function listenControlSocket(onLine, socketPath = CONTROL_SOCKET) {
  const dir = path.dirname(socketPath);
  const server = net.createServer((conn) => {
    conn.setNoDelay?.(true);
    conn.on('error', (err) => log(`a connection failed: ${err.code || err.message}`));
    const send = lineWriter(conn);
    conn.on('data', lineSplitter((line) => onLine(line, send)));
  });
  return new Promise((resolve) => {
    let listening = false;
    server.on('error', (err) => {
      log(`${listening ? 'failed' : `cannot listen on ${socketPath}`}: ${err.code || err.message}; the attached channel still serves`);
      resolve(null);
    });
    try {
      // Root only for these calls; listen() binds synchronously.
      asRoot(() => {
        const owner = fs.statSync(dir).uid;
        if (owner === RUN_AS.uid) throw Object.assign(new Error(`${dir} belongs to the command user`), { code: 'EOWNER' });
        // Through a descriptor of the directory: its owner may not traverse the root-only /var/lib/thinkflow.
        const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
        const via = `/proc/self/fd/${fd}/${path.basename(socketPath)}`;
        try {
          asUser(owner, () => {
            fs.rmSync(via, { force: true }); // left by the container's previous start
            server.listen(via);
            fs.chmodSync(via, 0o600);
          });
        } finally {
          fs.closeSync(fd);
        }
      });
    } catch (err) {
      if (err.code !== 'ENOENT') log(`cannot prepare ${socketPath}: ${err.code || err.message}`);
      server.close();
      resolve(null);
      return;
    }
    server.once('listening', () => {
      listening = true;
      resolve(server);
    });
  });
}
