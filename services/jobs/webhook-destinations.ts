// Where webhooks may go (API.md additions, `THINKFLOW_WEBHOOK_ALLOW`). A
// webhook URL is chosen by whoever submits a job, so without this the
// service is a request-forgery tool against its own network: Redis on
// localhost, the cloud metadata endpoint, link-local services.
//
// Unset: any destination except loopback, link-local, unspecified and cloud
// metadata addresses, in every spelling (`0x7f000001`, `[::1]`,
// `::ffff:127.0.0.1`, `0.0.0.0`), and the addresses of this host's own
// interfaces (its Docker bridge 172.17.0.1, its LAN address: services bound
// there are the host's, not the internet's). Set: only the listed hosts,
// `host:port`s and CIDRs, and an own address only when an entry names it
// (its IP, or the host name used); a CIDR that merely covers it is not
// enough. Interfaces come and go (Docker adds bridges), so they are read
// again at each check (one getifaddrs call). The check is made on the resolved address, and the delivery connects
// to that very address (no second DNS answer can point it elsewhere).
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

export type Resolved = { ok: true; address: string; family: 4 | 6; url: URL } | { ok: false; reason: string; retryable: boolean };

type AllowEntry = { host: string; port?: string } | { net: BlockList; text: string; port?: string; single: boolean };

/** The addresses of this host's interfaces, every family, read now. */
export type HostAddresses = () => string[];

export const hostAddresses: HostAddresses = () =>
  Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));

const REFUSED = new BlockList();
REFUSED.addSubnet('127.0.0.0', 8, 'ipv4'); // loopback
REFUSED.addSubnet('0.0.0.0', 8, 'ipv4'); // "this network", 0.0.0.0 connects to the host itself
REFUSED.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, AWS/GCP/Azure metadata 169.254.169.254
REFUSED.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
REFUSED.addAddress('192.0.0.192', 'ipv4'); // Oracle Cloud metadata
REFUSED.addAddress('::', 'ipv6');
REFUSED.addAddress('::1', 'ipv6');
REFUSED.addSubnet('fe80::', 10, 'ipv6'); // link-local
REFUSED.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

/** `THINKFLOW_WEBHOOK_ALLOW` → entries; throws naming a bad one so a typo never opens everything. */
export function parseWebhookAllow(raw: string | null | undefined): AllowEntry[] | null {
  if (raw === null || raw === undefined || raw.trim() === '') return null;
  return raw.split(',').map((s) => s.trim()).filter(Boolean).map((item): AllowEntry => {
    const cidr = /^(.+)\/(\d{1,3})$/.exec(item);
    if (cidr) {
      const family = isIP(cidr[1]!);
      const bits = Number(cidr[2]);
      if (family === 0 || bits > (family === 4 ? 32 : 128)) throw new Error(`THINKFLOW_WEBHOOK_ALLOW: bad CIDR '${item}'`);
      const net = new BlockList();
      net.addSubnet(cidr[1]!, bits, family === 4 ? 'ipv4' : 'ipv6');
      return { net, text: item, single: bits === (family === 4 ? 32 : 128) };
    }
    const { host, port } = splitHostPort(item);
    if (!host || (port !== undefined && !/^\d{1,5}$/.test(port))) throw new Error(`THINKFLOW_WEBHOOK_ALLOW: bad entry '${item}' (expected host, host:port or CIDR)`);
    const family = isIP(host);
    if (family !== 0) {
      const net = new BlockList();
      net.addAddress(host, family === 4 ? 'ipv4' : 'ipv6');
      return { net, text: item, single: true, ...(port ? { port } : {}) };
    }
    return { host: host.toLowerCase(), ...(port ? { port } : {}) };
  });
}

function splitHostPort(item: string): { host: string; port?: string } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(item);
  if (v6) return { host: v6[1]!, ...(v6[2] ? { port: v6[2] } : {}) };
  const parts = item.split(':');
  if (parts.length === 2) return { host: parts[0]!, port: parts[1]! };
  return { host: item }; // a bare IPv6 address has several colons
}

/**
 * Checks a webhook URL and resolves it to the one address to connect to.
 * `retryable`: the refusal may change (a DNS failure), unlike a refused address.
 */
export async function resolveWebhook(raw: string, allow: AllowEntry[] | null, resolve = lookupAll, ownAddresses: HostAddresses = hostAddresses): Promise<Resolved> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: `not a URL: ${JSON.stringify(raw)}`, retryable: false };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `protocol ${url.protocol} is not http(s)`, retryable: false };
  if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not accepted', retryable: false };
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  let addresses: { address: string; family: number }[];
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolve(host);
  } catch (err) {
    return { ok: false, reason: `cannot resolve ${host}: ${(err as Error).message}`, retryable: true };
  }
  if (addresses.length === 0) return { ok: false, reason: `${host} has no address`, retryable: true };
  const own = ownSet(ownAddresses());
  // Every address the name has must pass: otherwise the answer could differ between check and use.
  for (const a of addresses) {
    const why = refusal(host, port, a.address, allow, own);
    if (why) return { ok: false, reason: `destination ${host}:${port} refused: ${why}`, retryable: false };
  }
  const first = addresses[0]!;
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4, url };
}

function refusal(host: string, port: string, address: string, allow: AllowEntry[] | null, own: BlockList): string | undefined {
  const { ip, family } = unmapped(address);
  const v = family === 4 ? 'ipv4' : 'ipv6';
  const isOwn = own.check(ip, v);
  if (allow === null) {
    if (REFUSED.check(ip, v)) return `${address} is a loopback, link-local, unspecified or cloud metadata address (set THINKFLOW_WEBHOOK_ALLOW to allow it)`;
    return isOwn ? `${address} is an address of this host's own interfaces (name it in THINKFLOW_WEBHOOK_ALLOW to allow it)` : undefined;
  }
  const hit = allow.some((e) => {
    if (e.port !== undefined && e.port !== port) return false;
    if ('host' in e) return e.host === host;
    if (isOwn && !e.single) return false;
    return e.net.check(ip, v) || e.net.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6');
  });
  if (hit) return undefined;
  return isOwn
    ? `${host}:${port} (${address}) is an address of this host's own interfaces: THINKFLOW_WEBHOOK_ALLOW must name it (a CIDR covering it is not enough)`
    : `${host}:${port} (${address}) is not in THINKFLOW_WEBHOOK_ALLOW`;
}

/** Own addresses as one list; IPv4-mapped spellings count as their IPv4 address. */
function ownSet(addresses: string[]): BlockList {
  const set = new BlockList();
  for (const raw of addresses) {
    const a = raw.replace(/%.*$/, ''); // an IPv6 zone (`fe80::1%eth0`) is not part of the address
    if (isIP(a) === 0) continue;
    const { ip, family } = unmapped(a);
    set.addAddress(ip, family === 4 ? 'ipv4' : 'ipv6');
  }
  return set;
}

/** `::ffff:127.0.0.1` and NAT64 `64:ff9b::7f00:1` are IPv4 addresses in disguise. */
function unmapped(address: string): { ip: string; family: 4 | 6 } {
  if (isIP(address) === 4) return { ip: address, family: 4 };
  const lower = address.toLowerCase();
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(lower);
  if (m) {
    if (m[1]) return { ip: m[1], family: 4 };
    const hi = parseInt(m[2]!, 16);
    const lo = parseInt(m[3]!, 16);
    return { ip: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, family: 4 };
  }
  return { ip: address, family: 6 };
}

async function lookupAll(host: string): Promise<{ address: string; family: number }[]> {
  return lookup(host, { all: true, verbatim: true });
}
