// REDIS_URL (API.md "Additions (2026-12-01)"): one Redis (`redis://`,
// `rediss://`), a Redis Cluster (`redis+cluster://h1:p1,h2:p2,…`: seed nodes,
// the rest is discovered) or a Sentinel set (`redis+sentinel://h1:p1,…/MASTER`).
// Credentials go before the hosts (`user:pass@`) and apply to every node (for
// Sentinel: to the master and replicas; `?sentinelPassword=` for the sentinels).
// WHATWG URL cannot parse a host list, so this parser is our own; every
// refusal names what was wrong.

export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: HostPort[]; username?: string; password?: string; tls: boolean }
  | { kind: 'sentinel'; sentinels: HostPort[]; master: string; db: number; username?: string; password?: string; sentinelPassword?: string; tls: boolean };

export type HostPort = { host: string; port: number };

export class RedisUrlError extends Error {
  constructor(url: string, what: string) {
    super(`REDIS_URL '${redact(url)}': ${what}`);
    this.name = 'RedisUrlError';
  }
}

/** The URL with its password replaced, for error messages and logs. */
export function redact(url: string): string {
  return url.replace(/^([a-z+]+:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

const SCHEMES = ['redis:', 'rediss:', 'redis+cluster:', 'rediss+cluster:', 'redis+sentinel:', 'rediss+sentinel:'];

/** Parses REDIS_URL; throws RedisUrlError naming the fault. */
export function parseRedisUrl(url: string): RedisTarget {
  const m = /^([a-z][a-z0-9+.-]*:)\/\/(.*)$/i.exec(url.trim());
  if (!m) throw new RedisUrlError(url, `expected one of ${SCHEMES.map((s) => `${s}//`).join(', ')}`);
  const scheme = m[1]!.toLowerCase();
  if (!SCHEMES.includes(scheme)) throw new RedisUrlError(url, `unknown scheme '${scheme}//' (expected one of ${SCHEMES.join(' ')})`);
  if (scheme === 'redis:' || scheme === 'rediss:') {
    try { new URL(url); } catch { throw new RedisUrlError(url, 'not a valid URL'); }
    return { kind: 'single', url };
  }
  const tls = scheme.startsWith('rediss');
  let rest = m[2]!;
  const q = rest.indexOf('?');
  const query = new URLSearchParams(q >= 0 ? rest.slice(q + 1) : '');
  if (q >= 0) rest = rest.slice(0, q);
  const at = rest.lastIndexOf('@');
  const auth = at >= 0 ? rest.slice(0, at) : '';
  rest = at >= 0 ? rest.slice(at + 1) : rest;
  const slash = rest.indexOf('/');
  const hostList = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';
  const nodes = parseHosts(url, hostList);
  const creds = parseAuth(url, auth);
  if (scheme.includes('cluster')) {
    if (path !== '') throw new RedisUrlError(url, `a cluster URL takes no path ('/${path}'): Redis Cluster has only database 0`);
    return { kind: 'cluster', nodes, tls, ...creds };
  }
  const [master, db = '0', ...extra] = path.split('/');
  if (!master) throw new RedisUrlError(url, 'missing the master name: redis+sentinel://h1:p1,h2:p2/MASTER');
  if (!/^[A-Za-z0-9_.-]+$/.test(master)) throw new RedisUrlError(url, `master name '${master}' has characters other than A-Z a-z 0-9 _ . -`);
  if (extra.length > 0 || !/^\d{1,2}$/.test(db)) throw new RedisUrlError(url, `expected /MASTER or /MASTER/DB after the hosts, got '/${path}'`);
  const sentinelPassword = query.get('sentinelPassword') ?? undefined;
  return { kind: 'sentinel', sentinels: nodes, master, db: Number(db), tls, ...creds, ...(sentinelPassword ? { sentinelPassword } : {}) };
}

function parseHosts(url: string, list: string): HostPort[] {
  if (list === '') throw new RedisUrlError(url, 'no hosts: expected h1:p1,h2:p2,…');
  return list.split(',').map((item) => {
    const hm = /^(\[[0-9a-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/i.exec(item);
    if (!hm) throw new RedisUrlError(url, `host '${item}' is not host:port`);
    const port = Number(hm[2]);
    if (port < 1 || port > 65535) throw new RedisUrlError(url, `port ${port} of '${item}' is out of range (1-65535)`);
    return { host: hm[1]!.replace(/^\[|\]$/g, ''), port };
  });
}

function parseAuth(url: string, auth: string): { username?: string; password?: string } {
  if (auth === '') return {};
  const colon = auth.indexOf(':');
  const dec = (s: string) => {
    try { return decodeURIComponent(s); } catch { throw new RedisUrlError(url, 'credentials are not valid percent-encoding'); }
  };
  if (colon < 0) return { username: dec(auth) };
  const username = dec(auth.slice(0, colon));
  return { ...(username ? { username } : {}), password: dec(auth.slice(colon + 1)) };
}
