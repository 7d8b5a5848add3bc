// Shared pieces of the egress proxy tests. Every upstream is a server on
// 127.0.0.1; addresses that must be refused (private, metadata, other
// loopback) only ever come from an injected resolver, and the injected dialer
// records what it is asked and connects only to 127.0.0.1 test servers.
import { mkdtempSync, rmSync } from 'node:fs';
import { afterEach, beforeEach } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EgressProxy } from '../../../../services/sandbox/egress/proxy.ts';
import type { AddressCheck, EgressDecision, EgressLimits, EgressProxyDeps, EgressTarget, EgressUsage } from '../../../../services/sandbox/egress/types.ts';

/** Loopback, private, link-local, metadata, unspecified: refused unless `named` lists the literal address (a "global rule"). */
export function specialAddressCheck(named: string[] = []) {
  const special = new net.BlockList();
  for (const [net4, bits] of [['127.0.0.0', 8], ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['169.254.0.0', 16], ['0.0.0.0', 8]] as const) {
    special.addSubnet(net4, bits, 'ipv4');
  }
  for (const [net6, bits] of [['::1', 128], ['::', 128], ['fe80::', 10], ['fc00::', 7], ['::ffff:0:0', 96]] as const) special.addSubnet(net6, bits, 'ipv6');
  const asked: string[] = [];
  const check = (_session: string, address: string): AddressCheck => {
    asked.push(address);
    if (named.includes(address)) return { allowed: true };
    const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
    return special.check(address, family)
      ? { allowed: false, message: `egress refused: ${address} is a special address not named by a global rule (rule: special-addresses)` }
      : { allowed: true };
  };
  return { check, asked };
}

/** Records each dial; connects only to 127.0.0.1 (anything else is a test bug and fails without a packet sent). */
export function recordingDialer() {
  const calls: Array<[string, number]> = [];
  const dial = (address: string, port: number): net.Socket => {
    calls.push([address, port]);
    if (address === '127.0.0.1') return net.connect({ host: address, port });
    const s = new net.Socket();
    process.nextTick(() => s.destroy(new Error(`test dialer refuses ${address}`)));
    return s;
  };
  return { calls, dial };
}

export type Finished = { target: EgressTarget; usage: EgressUsage };

/** A policy fake: allows what `allow` says, records decisions and usages. */
export function fakePolicy(allow: (t: EgressTarget) => boolean | Promise<boolean> = () => true) {
  const decided: EgressTarget[] = [];
  const finished: Finished[] = [];
  const decide = async (_s: string, target: EgressTarget): Promise<EgressDecision> => {
    decided.push(target);
    if (await allow(target)) return { allow: true, finish: (usage) => finished.push({ target, usage }) };
    return { allow: false, status: 403, message: `egress refused: ${target.host}:${target.port} is forbidden by rule "no-evil" (policy test)` };
  };
  return { decide, decided, finished };
}

export type Harness = {
  proxy: EgressProxy;
  dir: string;
  path(session: string): string;
  dialer: ReturnType<typeof recordingDialer>;
  resolved: string[];
  cleanup(): Promise<void>;
};

/** A proxy with a recording dialer and a resolver from `names` (a name absent from it fails to resolve). */
export function harness(opts: {
  decide: EgressProxyDeps['decide'];
  named?: string[];
  names?: Record<string, string[]>;
  limits?: Partial<EgressLimits>;
  checkAddress?: EgressProxyDeps['checkAddress'];
  /** Replaces the recording dialer (still recorded). */
  dial?: EgressProxyDeps['dial'];
  log?: EgressProxyDeps['log'];
}): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'tf-egress-'));
  const dialer = recordingDialer();
  const resolved: string[] = [];
  const proxy = new EgressProxy({
    decide: opts.decide,
    checkAddress: opts.checkAddress ?? specialAddressCheck(opts.named ?? ['127.0.0.1']).check,
    resolve: async (host) => {
      resolved.push(host);
      const found = opts.names?.[host];
      if (!found) throw Object.assign(new Error(`no such name ${host}`), { code: 'ENOTFOUND' });
      return found;
    },
    dial: opts.dial ? (a, p) => (dialer.calls.push([a, p]), opts.dial!(a, p)) : dialer.dial,
    limits: opts.limits,
    log: opts.log,
  });
  return {
    proxy, dir, dialer, resolved,
    path: (session) => join(dir, `${session}.sock`),
    async cleanup() {
      await proxy.closeAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type RawAnswer = { status: number; head: string; body: string; socket: net.Socket };

/**
 * Sends `text` on the proxy socket and reads one response head; with
 * `untilClose` the rest until the proxy closes (a refusal's body).
 */
export function exchange(socketPath: string, text: string, untilClose = false): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    let data = Buffer.alloc(0);
    let headEnd = -1;
    const finish = () => {
      const all = data.toString('latin1');
      const end = headEnd < 0 ? all.length : headEnd;
      const head = all.slice(0, end);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: data.subarray(end + 4).toString('utf8'), socket });
    };
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (headEnd < 0) headEnd = data.indexOf('\r\n\r\n');
      if (headEnd >= 0 && !untilClose) {
        socket.removeAllListeners('data');
        socket.pause();
        const rest = data.subarray(headEnd + 4);
        if (rest.length) socket.unshift(rest);
        finish();
      }
    });
    socket.on('error', (err) => (data.length ? finish() : reject(err)));
    socket.on('close', () => finish());
    socket.write(text);
  });
}

export const connectText = (authority: string) => `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`;

/** Reads exactly `n` bytes from a tunnel. */
export function readBytes(socket: net.Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let got = 0;
    const onData = (d: Buffer) => {
      parts.push(d);
      got += d.length;
      if (got >= n) {
        socket.off('data', onData);
        resolve(Buffer.concat(parts));
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.resume();
  });
}

/** A TCP echo server on 127.0.0.1. */
export async function echoServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

export type Seen = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string };

/** An HTTP server on 127.0.0.1 answering `hello <path>`; `/hang` never answers. Records what it saw. */
export async function httpServer(): Promise<{ port: number; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url === '/hang') return;
      res.end(`hello ${req.url}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms until true, failing after `ms`. */
export async function until(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/**
 * Each test's parts: an upstream started before it (`t.up`), and the harness
 * the test makes (`t.h`); after it the harness is cleaned up, then the upstream closed.
 */
export function perTest<U extends { close(): Promise<void> }>(start: () => Promise<U>): { up: U; h: Harness | undefined } {
  const t = { h: undefined } as { up: U; h: Harness | undefined };
  beforeEach(async () => {
    t.up = await start();
  });
  afterEach(async () => {
    await t.h?.cleanup();
    t.h = undefined;
    await t.up.close();
  });
  return t;
}
