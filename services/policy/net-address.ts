// Addresses and host names of network rules and the egress proxy (POLICY.md
// §8). IP parsing and the special-purpose ranges come from ipaddr.js; this
// file only says how the policy reads them: which spellings are one address,
// how `host:port` is written, and which addresses are never dialed unless a
// global rule names them.
import ipaddr from 'ipaddr.js';

export type IP = ipaddr.IPv4 | ipaddr.IPv6;
export type Cidr = readonly [IP, number];

/**
 * An IP literal, read as the resolver would read it (`127.1`, `0x7f.0.0.1`
 * and `0177.0.0.1` are 127.0.0.1; IPv6 in brackets or bare), an IPv4-mapped
 * IPv6 address as its IPv4 address. `undefined`: not an address.
 */
export function parseIp(text: string): IP | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(bare)) return undefined;
  return ipaddr.process(bare);
}

/** One string per address, whatever the spelling (zone ids dropped): for Set lookups. */
export function ipKey(ip: IP): string {
  return ip.kind() === 'ipv6' ? new ipaddr.IPv6((ip as ipaddr.IPv6).parts).toNormalizedString() : ip.toString();
}

/** @throws Error for text that is not `ADDRESS/BITS` */
export function parseCidr(text: string): Cidr {
  const [addr, bits] = ipaddr.parseCIDR(text);
  return [addr, bits];
}

/** An IPv4 address also meets an IPv6 CIDR by its mapped form (::ffff:a.b.c.d). */
export function inCidr(ip: IP, [net, bits]: Cidr): boolean {
  if (ip.kind() === net.kind()) return ip.match(net, bits);
  return ip.kind() === 'ipv4' && (ip as ipaddr.IPv4).toIPv4MappedAddress().match(net, bits);
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * A host as rules see it: an address (`ip`), or a DNS name lowercased without
 * a trailing dot. `undefined` for text that is neither (empty, spaces,
 * non-ASCII — names are matched in their xn-- form — over 253 characters).
 */
export type Host = { name: string; ip: undefined } | { name: undefined; ip: IP };

export function readHost(text: string): Host | undefined {
  const ip = parseIp(text);
  if (ip) return { name: undefined, ip };
  const name = text.toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > 253) return undefined;
  return name.split('.').every((l) => LABEL.test(l)) ? { name, ip: undefined } : undefined;
}

/** `host:port` as messages and grants write it: IPv6 in brackets. */
export function showHostPort(host: string, port: number | undefined): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return port === undefined ? h : `${h}:${port}`;
}

export type HostPort = { host: string; port?: number };

/**
 * `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address (no port:
 * its colons leave none to read). `error` says what is wrong, also for a host
 * that is neither a name nor an address (readHost).
 */
export function parseHostPort(text: string): HostPort | { error: string } {
  let host = text;
  let port: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return { error: 'an IPv6 address opened with [ is not closed' };
    host = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return { error: `unexpected ${JSON.stringify(rest)} after ]` };
    if (rest !== '') port = rest.slice(1);
    if (!ipaddr.IPv6.isValid(host)) return { error: `${JSON.stringify(host)} in brackets is not an IPv6 address` };
  } else if (text.indexOf(':') === text.lastIndexOf(':') && text.includes(':')) {
    [host, port] = text.split(':') as [string, string];
  }
  if (host === '') return { error: 'no host' };
  if (readHost(host) === undefined) return { error: `${JSON.stringify(host.slice(0, 300))} is not a host name or IP address` };
  if (port === undefined) return { host };
  const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(n >= 1 && n <= 65535)) return { error: `port ${JSON.stringify(port)} is not a number from 1 to 65535` };
  return { host, port: n };
}

export const SPECIAL_ADDRESSES = ['loopback', 'private', 'link-local', 'metadata', 'unspecified', 'multicast', 'broadcast', 'reserved', 'invalid'] as const;
/** Why an address is never dialed unless a global rule names it; `invalid`: not an address at all. */
export type SpecialAddress = (typeof SPECIAL_ADDRESSES)[number];

/**
 * Cloud instance-metadata endpoints: AWS, GCP, Azure and Oracle
 * (169.254.169.254, and fd00:ec2::254 on AWS Nitro), AWS ECS task metadata,
 * Alibaba Cloud, and Azure's WireServer (a public-looking address that
 * answers only inside Azure).
 */
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16', 'fd00:ec2::254'].map((a) => ipKey(parseIp(a)!)));

// ipaddr.js range names → why they are special; unlisted names (new ones in
// a later ipaddr.js) are `reserved`, so an unknown range fails closed.
const RANGES: Record<string, SpecialAddress | null> = {
  unicast: null,
  loopback: 'loopback',
  private: 'private',
  carrierGradeNat: 'private',
  uniqueLocal: 'private',
  linkLocal: 'link-local',
  unspecified: 'unspecified',
  multicast: 'multicast',
  broadcast: 'broadcast',
};

const GLOBAL_UNICAST = parseCidr('2000::/3');
// Ranges ipaddr.js 2.2.0 does not name: local-use NAT64 (RFC 8215), IPv6
// documentation (RFC 9637), deprecated site-local, SRv6 SIDs (RFC 9602).
const EXTRA: readonly (readonly [Cidr, SpecialAddress])[] = [
  [parseCidr('64:ff9b:1::/48'), 'private'],
  [parseCidr('3fff::/20'), 'reserved'],
  [parseCidr('fec0::/10'), 'private'],
  [parseCidr('5f00::/16'), 'reserved'],
];

/**
 * Why an address must not be dialed on a name's word (POLICY.md §8), or
 * `null` for an ordinary public address. IPv4-mapped, NAT64, 6to4 and
 * IPv4-translated IPv6 addresses are judged by the IPv4 address they carry;
 * Teredo and every IPv6 address outside 2000::/3 are `reserved`.
 */
export function specialAddress(ip: string): SpecialAddress | null {
  const parsed = parseIp(ip);
  return parsed ? classify(parsed) : 'invalid';
}

function classify(ip: IP): SpecialAddress | null {
  if (METADATA.has(ipKey(ip))) return 'metadata';
  const range = ip.range();
  if (ip.kind() === 'ipv6') {
    const p = (ip as ipaddr.IPv6).parts;
    if (range === 'rfc6052' || range === 'rfc6145') return classify(v4(p[6]!, p[7]!));
    if (range === '6to4') return classify(v4(p[1]!, p[2]!));
    for (const [cidr, why] of EXTRA) if (inCidr(ip, cidr)) return why;
    if (range === 'unicast' && !inCidr(ip, GLOBAL_UNICAST)) return 'reserved';
  }
  const why = RANGES[range];
  return why === undefined ? 'reserved' : why;
}

function v4(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}
