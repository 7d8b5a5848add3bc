// Network rules (POLICY.md §8): the connections the egress proxy may open,
// named by `host` (exact names, one leading `*.`, IP literals), `port` and
// `cidr`. A rule's hosts and networks are alternatives; its ports narrow all
// of them. Compiled once at load time to sets and parsed networks, so a
// connection is matched by lookups.
import { inCidr, ipKey, parseCidr, parseHostPort, readHost, type Cidr, type Host, type IP } from '../net-address.ts';
import type { RuleInput } from '../schema.ts';
import type { Example, Fail, RuleHead, RuleKind } from './kind.ts';

export type NetworkRule = RuleHead & {
  kind: 'network';
  /** Exact names of `host`, lowercased, without a trailing dot. */
  names: ReadonlySet<string>;
  /** `*.example.com` as `.example.com`: a name ending so, with at least one label before it (not `example.com` itself). */
  suffixes: readonly string[];
  /** IP literals of `host` (by ipKey): like one-address CIDRs. */
  ips: ReadonlySet<string>;
  cidrs: readonly Cidr[];
  /** Absent: every port. */
  ports: ReadonlySet<number> | undefined;
};

/** An address of a connection: its host when that is an IP literal, and the address the name resolved to. */
export type ConnAddress = { ip: IP; key: string };

/**
 * What a network rule judges. `port` is absent only for an `examples` entry
 * written without one: then the rule's ports are not asked.
 */
export type Connection = { name: string | undefined; addresses: readonly ConnAddress[]; port: number | undefined };

export function connectionOf(host: Host, port: number | undefined, resolved?: IP): Connection {
  const addresses: ConnAddress[] = [];
  for (const ip of [host.ip, resolved]) if (ip) addresses.push({ ip, key: ipKey(ip) });
  return { name: host.name, addresses, port };
}

function matches(r: NetworkRule, c: Connection): boolean {
  if (c.port !== undefined && r.ports !== undefined && !r.ports.has(c.port)) return false;
  const name = c.name;
  if (name !== undefined) {
    if (r.names.has(name)) return true;
    for (const s of r.suffixes) if (name.length > s.length && name.endsWith(s)) return true;
  }
  for (const a of c.addresses) {
    if (r.ips.has(a.key)) return true;
    for (const n of r.cidrs) if (inCidr(a.ip, n)) return true;
  }
  return false;
}

/** The rule names this address: as an IP literal of `host`, or by a CIDR containing it (hosts by name never do). */
export function namesAddress(r: NetworkRule, a: ConnAddress): boolean {
  return r.ips.has(a.key) || r.cidrs.some((n) => inCidr(a.ip, n));
}

const NO_EXCEPT = 'except: network rules take no `except` (name the hosts and networks a rule is for)';

function refuseExcept(): string {
  return NO_EXCEPT;
}

const listOf = <T>(v: T | readonly T[] | undefined): readonly T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v as T]);

function compile(head: RuleHead, input: RuleInput, fail: Fail): NetworkRule {
  if (input.except !== undefined) fail(NO_EXCEPT);
  if (input.host === undefined && input.cidr === undefined) fail('a network rule needs `host` or `cidr` (or both)');
  const names = new Set<string>();
  const suffixes: string[] = [];
  const ips = new Set<string>();
  for (const h of listOf(input.host)) {
    const shown = JSON.stringify(h);
    const wild = h.startsWith('*.');
    if ((wild ? h.slice(2) : h).includes('*')) fail(`host ${shown}: only one leading "*." is a wildcard (for every host, set defaults.network)`);
    const read = readHost(wild ? h.slice(2) : h);
    if (read === undefined) fail(`host ${shown} is not a host name or IP address (write international names in their xn-- form)`);
    else if (read.ip && wild) fail(`host ${shown}: a wildcard names the subdomains of a name, not of an address (use cidr)`);
    else if (read.ip) ips.add(ipKey(read.ip));
    else if (wild) suffixes.push(`.${read.name}`);
    else names.add(read.name);
  }
  const cidrs = listOf(input.cidr).map((c) => cidrOf(c, fail));
  const ports = input.port === undefined ? undefined : new Set(listOf(input.port));
  const { id, layer, file, index, tools, decision, justification, appliesTo } = head;
  // One literal, not a spread of `head`: every field stays in the object, a load away on the hot path.
  return { kind: 'network', id, layer, file, index, tools, decision, justification, appliesTo, names, suffixes, ips, cidrs, ports };
}

function cidrOf(text: string, fail: Fail): Cidr {
  try {
    return parseCidr(text);
  } catch (err) {
    return fail(`cidr ${JSON.stringify(text)} is not ADDRESS/BITS (${(err as Error).message})`);
  }
}

/** `host:port`, `host` (then any port), `[v6]:port`: as the proxy reads a CONNECT target. */
function matchesExample(rule: NetworkRule, ex: Example, fail: Fail): boolean {
  const shown = JSON.stringify(ex);
  if (typeof ex !== 'string') return fail(`example ${shown}: network rules take "host:port" examples (strings)`);
  const hp = parseHostPort(ex);
  if ('error' in hp) return fail(`example ${shown}: ${hp.error}`);
  // parseHostPort refuses a host readHost cannot read.
  return matches(rule, connectionOf(readHost(hp.host)!, hp.port));
}

export const NETWORK_RULES: RuleKind<NetworkRule, Connection> = {
  kind: 'network',
  field: 'host',
  otherFields: ['cidr', 'port'],
  judged: 'connections',
  otherTools: '`host`, `port` and `cidr` apply to `tool: network` only',
  refuseExcept,
  compile,
  matches,
  matchesExample,
};
