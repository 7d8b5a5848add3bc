import { STATUS_CODES, type ServerResponse } from 'node:http';
import type net from 'node:net';

// Every refusal is a short text body naming why, so the command's own output
// (curl, npm, pip, git print it) says which rule closed the connection.

function body(message: string): Buffer {
  return Buffer.from(message.endsWith('\n') ? message : `${message}\n`);
}

/**
 * Answers on a socket the HTTP server no longer owns (CONNECT, a connection
 * over the cap, a malformed head) and closes it once the answer is flushed.
 * On a Unix socket the peer reads what was written before the close.
 */
export function answerSocket(socket: net.Socket, status: number, message: string): void {
  if (socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const text = body(message);
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n`;
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), text]), () => socket.destroy());
}

/** Answers a plain request once (later calls do nothing); `Connection: close` makes the server close the socket after it. */
export function answerResponse(res: ServerResponse, status: number, message: string): void {
  if (res.destroyed || res.writableEnded) return;
  if (res.headersSent) {
    // Mid-body there is no status left to send: cutting the connection is the only way to say it failed.
    res.destroy();
    return;
  }
  const text = body(message);
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(text.length),
    connection: 'close',
  });
  res.end(text);
}
