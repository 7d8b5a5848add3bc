// The sandbox's only way out. The container has no network (`network: none`,
// loopback only); this relay listens on 127.0.0.1:3128 inside it, where
// commands' HTTP_PROXY points (tool-config.mjs), and copies each accepted TCP
// connection, bytes both ways with backpressure, to the session's egress proxy:
// a Unix socket in a directory bind-mounted from the worker host, below
// /var/lib/thinkflow (root only, mode 0700 in the image). It reads nothing it
// relays: the proxy on the other side parses HTTP and asks the policy.
//
// Commands cannot connect to the socket themselves (they cannot traverse the
// root-only /var/lib/thinkflow), nor reach the executor's control channel
// through the relay (its only destination is the socket; it never touches
// stdin or stdout).
//
// The relay opens the egress directory once, as root, and dials through that
// descriptor (/proc/self/fd/N/egress.sock) with the command user's effective
// ids, which the host's 0711 directory and 0666 socket admit. Switching to
// root per connection instead cost about 6 ms each: glibc's seteuid signals
// every thread of the process (setxid broadcast) twice per switch. A command
// cannot take the same path: /proc/<executor>/fd and /proc/1/root are closed
// to it (identity.mjs), and /var/lib/thinkflow stays 0700 root.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { asRoot } from './identity.mjs';
import { RELAY_HOST, RELAY_PORT, RELAY_URL } from './relay-address.mjs';

export { RELAY_HOST, RELAY_PORT, RELAY_URL };
/** The proxy's socket as the container sees it (services/sandbox/container-spec.ts mounts its directory). */
export const EGRESS_SOCKET = '/var/lib/thinkflow/egress/egress.sock';

// A refused client is answered and then read until it closes (closing with its
// request unread would reset the connection before it reads the answer), at most this long.
const REFUSAL_LINGER_MS = 1_000;

const log = (msg) => process.stderr.write(`executor: egress relay: ${msg}\n`);

/** An HTTP answer a proxy client (curl, pip, npm, git) prints or reports, then the connection closes. */
function refuse(client, status, text) {
  const body = `${text}\n`;
  client.resume();
  client.end(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => client.destroy(), REFUSAL_LINGER_MS).unref();
}

/**
 * The socket's path through a descriptor of its directory, opened as root
 * (the only moment root is needed). The descriptor is close-on-exec (libuv
 * opens every file so), so no command inherits it. Null while the directory
 * cannot be opened (a setup without the mount): each dial tries again.
 */
function socketOpener(socketPath) {
  let viaFd = null;
  return () => {
    if (viaFd) return viaFd;
    try {
      const fd = asRoot(() => fs.openSync(path.dirname(socketPath), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY));
      viaFd = `/proc/self/fd/${fd}/${path.basename(socketPath)}`;
    } catch (err) {
      if (err.code !== 'ENOENT') log(`cannot open ${path.dirname(socketPath)}: ${err.code || err.message}`);
    }
    return viaFd;
  };
}

function dial(target) {
  const at = target();
  if (!at) throw Object.assign(new Error('no egress directory'), { code: 'ENOENT' });
  return net.createConnection({ path: at, allowHalfOpen: true });
}

/** Relays one client connection; `done` is called once both sides are closed. `track` learns the upstream socket. */
function relay(client, target, done, track) {
  let upstream;
  try {
    upstream = dial(target);
  } catch (err) {
    if (err.code !== 'ENOENT') log(`cannot open a socket: ${err.message}`);
    refuse(client, '503 Service Unavailable', 'no egress proxy for this session');
    client.once('close', done);
    return;
  }
  track(upstream);
  let connected = false;
  let open = 2;
  const closed = () => {
    if (--open === 0) done();
  };
  upstream.once('connect', () => {
    connected = true;
    // pipe() pauses the source while the destination's buffer is full; an
    // end on one side half-closes the other (both sockets allow half-open).
    client.pipe(upstream);
    upstream.pipe(client);
  });
  upstream.on('error', (err) => {
    // Absent (ENOENT), nobody listening (ECONNREFUSED), a full backlog (EAGAIN): no proxy for this session.
    if (!connected) refuse(client, '503 Service Unavailable', 'no egress proxy for this session');
    else client.destroy();
    if (!connected && err.code !== 'ENOENT' && err.code !== 'ECONNREFUSED') log(`proxy socket: ${err.code || err.message}`);
  });
  client.on('error', () => upstream.destroy());
  // A client gone before the proxy answered, or reset mid-way: the other side goes too.
  client.on('close', (hadError) => {
    if (hadError || !connected) upstream.destroy();
    closed();
  });
  upstream.on('close', (hadError) => {
    if (hadError && connected) client.destroy();
    closed();
  });
}

/**
 * Starts the relay. `listening` resolves once it listens (or could not:
 * logged, and commands then find nothing on the port). At most
 * `maxConnections` relayed at once; past it a client gets a 503 naming the
 * cap, and past twice that (refusals still lingering) Node closes new
 * connections at once, so a command opening thousands costs the executor a
 * bounded number of descriptors. `dropAll()` ends every connection: called
 * when a command ended, whose processes are all gone by then, so no relayed
 * connection outlives its command (a proxy that keeps a half-closed one open
 * would otherwise hold its slot).
 */
export function startEgressRelay({ maxConnections, socketPath = EGRESS_SOCKET, host = RELAY_HOST, port = RELAY_PORT }) {
  let active = 0;
  const target = socketOpener(socketPath);
  target();
  const sockets = new Set();
  const track = (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    track(client);
    client.setNoDelay(true);
    if (active >= maxConnections) {
      refuse(client, '503 Service Unavailable', `egress relay: ${maxConnections} connections are already open in this sandbox`);
      client.on('error', () => {});
      return;
    }
    active++;
    relay(client, target, () => active--, track);
  });
  server.maxConnections = maxConnections * 2;
  const listening = new Promise((resolve) => {
    server.once('listening', () => resolve(server));
    server.on('error', (err) => {
      // EMFILE on accept and the like: the listener stays; a failed listen leaves commands without egress.
      log(`${err.code || err.message}${server.listening ? '' : `; nothing listens on ${host}:${port}`}`);
      if (!server.listening) resolve(server);
    });
    server.listen({ host, port, exclusive: true });
  });
  return {
    listening,
    dropAll: () => {
      for (const s of sockets) s.destroy();
    },
  };
}
