// Connections against the layered policy (POLICY.md §8), for the egress
// proxy and `thinkflow policy check --net`. Pure and synchronous, like
// evaluate(): the proxy resolves names, waits for approvals and records the
// ledger; this file only says what the rules decide and why.
import { rank } from './decision.ts';
import type { PolicyLayers } from './layers.ts';
import type { MatchedRule } from './matched-rule.ts';
import { ipKey, parseIp, readHost, showHostPort, specialAddress, type Host, type SpecialAddress } from './net-address.ts';
import type { Evaluation } from './policy.ts';
import { connectionOf, namesAddress, type NetworkRule } from './rule-kinds/network-rule.ts';

/**
 * One connection: `host` as the client named it (a CONNECT target or a
 * `Host` header: a name, or an IP literal, IPv6 bare or in brackets), its
 * port, and, once resolved, the `address` it will go to: `cidr` and
 * IP-literal hosts then match that address too.
 */
export type NetworkTarget = { host: string; port: number; address?: string };

/** An `approve_for_session` grant of one `host:port` (POLICY.md §8): satisfies a prompt, never a forbid. */
export type NetworkGrant = { host: string; port: number };

function toMatched(r: NetworkRule): MatchedRule {
  return { id: r.id, layer: r.layer, decision: r.decision, justification: r.justification };
}

/** The host as rules read it: a lowercased name, or the address in its usual spelling. */
function hostText(h: Host): string {
  return h.ip ? h.ip.toString() : h.name;
}

const sameHost = (a: Host, b: Host): boolean => (a.ip && b.ip ? ipKey(a.ip) === ipKey(b.ip) : a.name !== undefined && a.name === b.name);

/**
 * The decision for one connection: every network rule of every layer that
 * matches it, the strictest deciding; none: the `network` default of the most
 * specific layer setting one, else `forbid`. An unreadable host, port or
 * address is `forbid` with no rule (`invalid_host`, `invalid_port`,
 * `invalid_address`). Special addresses are a separate gate: checkDialAddress.
 */
export function evaluateNetwork(layers: PolicyLayers, target: NetworkTarget, grants: readonly NetworkGrant[] = []): Evaluation {
  const { port } = target;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return refused(`invalid_port: ${String(port)} is not a port from 1 to 65535`);
  const host = readHost(target.host);
  if (host === undefined) return refused(`invalid_host: ${JSON.stringify(target.host.slice(0, 300))} is not a host name or IP address`);
  const resolved = target.address === undefined ? undefined : parseIp(target.address);
  if (target.address !== undefined && resolved === undefined) return refused(`invalid_address: ${JSON.stringify(target.address.slice(0, 100))} is not an IP address`);
  const rules = layers.matchConnection(connectionOf(host, port, resolved));
  const subject = '`' + showHostPort(hostText(host), port) + '`';
  let decisive: NetworkRule | undefined;
  for (const r of rules) if (decisive === undefined || rank(r.decision) > rank(decisive.decision)) decisive = r;
  const matched_rules = rules.map(toMatched);
  if (decisive === undefined) {
    const d = layers.defaultFor('network');
    const source = d.layer === 'builtin' ? 'built-in' : `${d.layer} layer`;
    return granted(d.decision, host, port, grants, subject, matched_rules) ?? { decision: d.decision, matched_rules, reason: `no rule matched ${subject}; network default (${source}): ${d.decision}` };
  }
  const why = decisive.justification ? `: ${decisive.justification}` : '';
  const reason = `${decisive.decision} by rule ${decisive.id} (${decisive.layer}) for ${subject}${why}`;
  return granted(decisive.decision, host, port, grants, subject, matched_rules) ?? { decision: decisive.decision, matched_rules, reason };
}

function granted(decision: Evaluation['decision'], host: Host, port: number, grants: readonly NetworkGrant[], subject: string, matched_rules: MatchedRule[] = []): Evaluation | undefined {
  if (decision !== 'prompt') return undefined;
  const hit = grants.some((g) => {
    const h = g.port === port ? readHost(g.host) : undefined;
    return h !== undefined && sameHost(h, host);
  });
  return hit ? { decision: 'allow', matched_rules, reason: `prompt for ${subject} satisfied by a session grant` } : undefined;
}

function refused(reason: string): Evaluation {
  return { decision: 'forbid', matched_rules: [], reason };
}

/**
 * Whether a global-layer `allow` network rule names this address (an IP
 * literal of its `host`, or a `cidr` containing it) for this port. Project
 * and session rules never count: they cannot open a special address.
 */
export function addressAllowedByGlobalRule(layers: PolicyLayers, ip: string, port: number): { allowed: boolean; rule?: MatchedRule } {
  const parsed = parseIp(ip);
  if (parsed === undefined) return { allowed: false };
  const a = { ip: parsed, key: ipKey(parsed) };
  for (const r of layers.networkRules()) {
    if (r.layer !== 'global' || r.decision !== 'allow') continue;
    if (r.ports !== undefined && !r.ports.has(port)) continue;
    if (namesAddress(r, a)) return { allowed: true, rule: toMatched(r) };
  }
  return { allowed: false };
}

export type DialCheck = { allowed: boolean; special: SpecialAddress | null; rule?: MatchedRule; reason: string };

/**
 * The gate on the address a connection is about to go to (POLICY.md §8):
 * an ordinary public address passes (the rules were asked by
 * evaluateNetwork); a special one (specialAddress: loopback, private,
 * link-local, metadata, …) only when a global rule names it.
 */
export function checkDialAddress(layers: PolicyLayers, ip: string, port: number): DialCheck {
  const special = specialAddress(ip);
  const at = '`' + showHostPort(parseIp(ip)?.toString() ?? ip, port) + '`';
  if (special === null) return { allowed: true, special, reason: `${at} is a public address` };
  if (special === 'invalid') return { allowed: false, special, reason: `${at} is not an IP address` };
  const g = addressAllowedByGlobalRule(layers, ip, port);
  if (g.allowed) return { allowed: true, special, rule: g.rule!, reason: `${at} is a special address (${special}), opened by rule ${g.rule!.id} (global)` };
  return { allowed: false, special, reason: `${at} is a special address (${special}); only a global-layer network rule naming it (host or cidr) can open it` };
}

/**
 * evaluateNetwork, then the special-address gate on the address the
 * connection goes to: `target.address`, else the host when it is an IP
 * literal (a name not yet resolved passes the gate here; the proxy asks
 * checkDialAddress once it has resolved it). A refused address is `forbid`
 * whatever the rules said, with the rules that matched still listed.
 */
export function evaluateConnection(layers: PolicyLayers, target: NetworkTarget, grants: readonly NetworkGrant[] = []): Evaluation {
  const literal = target.address ?? (parseIp(target.host) ? target.host : undefined);
  const e = evaluateNetwork(layers, literal === undefined ? target : { ...target, address: literal }, grants);
  if (e.decision === 'forbid' || literal === undefined) return e;
  const dial = checkDialAddress(layers, literal, target.port);
  return dial.allowed ? e : { decision: 'forbid', matched_rules: e.matched_rules, reason: dial.reason };
}
