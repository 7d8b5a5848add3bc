import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

// A redis-server of a test's own, on its own port: for tests that count every
// key of the instance or change its memory settings (never the shared 6379's).

export type OwnRedis = { url: string; port: number; client: Redis; stop(): Promise<void> };

/** A port nothing listens on right now (127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `args`: extra redis-server options, e.g. ['--maxmemory', '8mb', '--maxmemory-policy', 'noeviction']. */
export async function startOwnRedis(args: string[] = []): Promise<OwnRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {}); // the first connects race the server's start; real failures surface on the commands below
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (err) {
      if (i > 100) throw err;
      client.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`, port, client,
    async stop() {
      client.disconnect();
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}

/** Every key of the instance with its TTL in seconds (-1 = none), by SCAN: fine on an instance of one's own. */
export async function keysWithTtl(client: Redis, match = '*'): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) out.set(k, await client.ttl(k));
  } while (cursor !== '0');
  return out;
}

/** True when a Redis answers PING on 127.0.0.1:`port` within 500 ms (a raw socket: no client, no retries). */
export async function ping(port: number): Promise<boolean> {
  const { Socket } = await import('node:net');
  return new Promise((resolve) => {
    const sock = new Socket();
    sock.setTimeout(500);
    sock.once('error', () => resolve(false));
    sock.once('timeout', () => { sock.destroy(); resolve(false); });
    sock.connect(port, '127.0.0.1', () => sock.write('PING\r\n'));
    sock.once('data', (d) => { sock.destroy(); resolve(d.toString().startsWith('+PONG')); });
  });
}
