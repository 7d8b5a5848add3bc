// The executor's control channels: JSON lines, one request or response per line.
// Two carry them: the container's attached stdin/stdout (the first channel,
// kept for hosts that attach) and a Unix socket in the session's directory,
// bind-mounted from the worker host (services/sandbox/executor-socket.ts).
// The socket spares every request two copies through dockerd and the
// container's shim, which the attach stream costs.
//
// Commands cannot reach the socket: it lies below /var/lib/thinkflow (root
// only, mode 0700 in the image), it is bound as root, and it is handed to the
// owner of the mounted directory (the host's service) with mode 0600.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { asRoot } from './identity.mjs';

/** The socket as the container sees it: in the session's directory beside the egress proxy's. */
export const CONTROL_SOCKET = '/var/lib/thinkflow/egress/executor.sock';

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

/**
 * Listens on `socketPath` and calls `onLine(line, send)` for each request of
 * each connection, `send` answering on that connection only. Resolves once
 * listening; resolves without a socket (logged) when the directory is not
 * mounted, so the attached channel alone still serves.
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
    server.once('error', (err) => {
      log(`cannot listen on ${socketPath}: ${err.code || err.message}; only the attached channel serves`);
      resolve(null);
    });
    let owner;
    try {
      // Bound and handed over as root; listen() binds synchronously, so root is held only for these calls.
      asRoot(() => {
        owner = fs.statSync(dir).uid;
        fs.rmSync(socketPath, { force: true }); // left by the container's previous start
        server.listen(socketPath);
        fs.chownSync(socketPath, owner, 0);
        fs.chmodSync(socketPath, 0o600);
      });
    } catch (err) {
      if (err.code !== 'ENOENT') log(`cannot prepare ${socketPath}: ${err.code || err.message}`);
      server.close();
      resolve(null);
      return;
    }
    server.once('listening', () => resolve(server));
  });
}
