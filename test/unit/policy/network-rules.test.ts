// `tool: network` rules (POLICY.md §8) as policy files state them: hosts
// (exact, one leading `*.`, IP literals), ports and CIDRs, examples checked
// at load, and the load errors that keep them apart from the other kinds.
import { describe, expect, it } from 'vitest';
import { parsePolicyDocument, PolicyLoadError } from '../../../services/policy/index.ts';
import { compileRule, RULE_KINDS, type Rule } from '../../../services/policy/rule-kinds/index.ts';
import { connectionOf, NETWORK_RULES, type NetworkRule } from '../../../services/policy/rule-kinds/network-rule.ts';
import { parseIp, readHost } from '../../../services/policy/net-address.ts';
import { RuleSchema } from '../../../services/policy/schema.ts';

class Refused extends Error {}
const fail = (reason: string): never => {
  throw new Refused(reason);
};
const compiled = (raw: Record<string, unknown>): Rule[] =>
  compileRule({ file: 'p.yaml', index: 0, layer: 'global' }, RuleSchema.parse({ id: 'r', decision: 'allow', ...raw }), fail);
const network = (raw: Record<string, unknown>): NetworkRule => {
  const [r] = compiled({ tool: 'network', ...raw });
  if (r?.kind !== 'network') throw new Error('not a network rule');
  return r;
};
/** Whether the rule matches `host` on `port` (optionally resolved to `address`). */
const hits = (r: NetworkRule, host: string, port: number | undefined = 443, address?: string): boolean =>
  NETWORK_RULES.matches(r, connectionOf(readHost(host)!, port, address === undefined ? undefined : parseIp(address)));
const loadError = (rule: Record<string, unknown>): string => {
  try {
    parsePolicyDocument('p.yaml', { rules: [{ id: 'r', decision: 'allow', ...rule }] }, 'global');
  } catch (err) {
    if (err instanceof PolicyLoadError) return err.message;
    throw err;
  }
  throw new Error('expected a load error');
};

describe('network rule hosts', () => {
  it('match exact names case-insensitively, with or without a trailing dot', () => {
    const r = network({ host: ['API.Internal.example', 'b.example.'] });
    expect(hits(r, 'api.internal.example')).toBe(true);
    expect(hits(r, 'API.INTERNAL.EXAMPLE.')).toBe(true);
    expect(hits(r, 'b.example')).toBe(true);
    expect(hits(r, 'x.api.internal.example')).toBe(false);
    expect(hits(r, 'internal.example')).toBe(false);
  });

  it('take one leading *. for any subdomain depth ≥ 1, never the bare domain', () => {
    const r = network({ host: '*.svc.example' });
    expect(hits(r, 'a.svc.example')).toBe(true);
    expect(hits(r, 'a.b.c.svc.example')).toBe(true);
    expect(hits(r, 'A.SVC.Example')).toBe(true);
    expect(hits(r, 'svc.example')).toBe(false);
    expect(hits(r, 'xsvc.example')).toBe(false);
    expect(hits(r, 'a.svc.example.evil')).toBe(false);
    expect(hits(r, 'svc.example.a')).toBe(false);
  });

  it('read IP literals as addresses, whatever their spelling (IPv6 bare or in brackets)', () => {
    const r = network({ host: ['10.1.2.3', '[2001:db8::1]', 'fd00::0:1'] });
    expect(hits(r, '10.1.2.3')).toBe(true);
    expect(hits(r, '012.1.2.3')).toBe(true); // octal 012 = 10, as the resolver reads it
    expect(hits(r, '::ffff:10.1.2.3')).toBe(true);
    expect(hits(r, '[2001:0db8:0::1]')).toBe(true);
    expect(hits(r, '2001:db8::1')).toBe(true);
    expect(hits(r, 'fd00::1')).toBe(true);
    expect(hits(r, '10.1.2.4')).toBe(false);
    // A name never matches an address rule by its text; its resolved address may.
    expect(hits(r, 'db.example')).toBe(false);
    expect(hits(r, 'db.example', 443, '10.1.2.3')).toBe(true);
  });

  it('never match an address against a wildcard', () => {
    expect(hits(network({ host: '*.example' }), '1.2.3.4', 443)).toBe(false);
  });
});

describe('network rule ports and CIDRs', () => {
  it('take any port when `port` is absent, else only the listed ones', () => {
    expect(hits(network({ host: 'a.example' }), 'a.example', 1)).toBe(true);
    expect(hits(network({ host: 'a.example' }), 'a.example', 65535)).toBe(true);
    const r = network({ host: 'a.example', port: [443, 8000] });
    expect(hits(r, 'a.example', 443)).toBe(true);
    expect(hits(r, 'a.example', 8000)).toBe(true);
    expect(hits(r, 'a.example', 80)).toBe(false);
    expect(hits(network({ host: 'a.example', port: 22 }), 'a.example', 22)).toBe(true);
  });

  it('match IPv4 and IPv6 networks against an IP-literal host or the resolved address', () => {
    const r = network({ cidr: ['10.1.2.0/24', 'fd00:ec2::/32'], port: 5432 });
    expect(hits(r, '10.1.2.200', 5432)).toBe(true);
    expect(hits(r, '::ffff:10.1.2.7', 5432)).toBe(true);
    expect(hits(r, '[fd00:ec2::5]', 5432)).toBe(true);
    expect(hits(r, '10.1.3.1', 5432)).toBe(false);
    expect(hits(r, '10.1.2.200', 5433)).toBe(false);
    expect(hits(r, 'db.example', 5432)).toBe(false);
    expect(hits(r, 'db.example', 5432, '10.1.2.9')).toBe(true);
    expect(hits(r, 'db.example', 5432, '10.9.2.9')).toBe(false);
  });

  it('lets an IPv4 address meet an IPv4-mapped IPv6 network', () => {
    expect(hits(network({ cidr: '::ffff:10.0.0.0/104' }), '10.9.9.9')).toBe(true);
  });

  it('take hosts and networks as alternatives in one rule', () => {
    const r = network({ host: 'a.example', cidr: ['192.0.2.0/24'] });
    expect(hits(r, 'a.example')).toBe(true);
    expect(hits(r, '192.0.2.9')).toBe(true);
    expect(hits(r, 'b.example')).toBe(false);
  });
});

describe('network rule examples', () => {
  it('read host:port, host (any port) and [v6]:port, checked at load', () => {
    const r = network({ host: ['api.example', '::1'], port: 443 });
    expect(NETWORK_RULES.matchesExample(r, 'api.example:443', fail)).toBe(true);
    expect(NETWORK_RULES.matchesExample(r, 'api.example:80', fail)).toBe(false);
    expect(NETWORK_RULES.matchesExample(r, 'api.example', fail)).toBe(true);
    expect(NETWORK_RULES.matchesExample(r, '[::1]:443', fail)).toBe(true);
    expect(NETWORK_RULES.matchesExample(r, '::1', fail)).toBe(true);
    expect(NETWORK_RULES.matchesExample(r, 'evil.example:443', fail)).toBe(false);
  });

  it('fail the load naming the rule when an example disagrees', () => {
    expect(loadError({ tool: 'network', host: '*.svc.example', examples: { match: ['svc.example:443'] } })).toBe(
      'p.yaml: rules[0] (r): example "svc.example:443" is listed in match but the rule does not match it',
    );
    expect(loadError({ tool: 'network', host: 'a.example', port: [443], examples: { not_match: ['a.example:443'] } })).toBe(
      'p.yaml: rules[0] (r): example "a.example:443" is listed in not_match but the rule matches it',
    );
  });

  it.each<[unknown, string]>([
    [['a.example', '443'], 'example ["a.example","443"]: network rules take "host:port" examples (strings)'],
    ['a.example:http', 'example "a.example:http": port "http" is not a number from 1 to 65535'],
    ['a.example:0', 'example "a.example:0": port "0" is not a number from 1 to 65535'],
    ['[::1:443', 'example "[::1:443": an IPv6 address opened with [ is not closed'],
    ['[a.example]:443', 'example "[a.example]:443": "a.example" in brackets is not an IPv6 address'],
    ['bad host:443', 'example "bad host:443": "bad host" is not a host name or IP address'],
  ])('refuse the unreadable example %j', (ex, message) => {
    expect(loadError({ tool: 'network', host: 'a.example', examples: { match: [ex] } })).toBe(`p.yaml: rules[0] (r): ${message}`);
  });
});

describe('network rule load errors', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['host on bash', { tool: 'bash', host: 'a.example' }, '`host`, `port` and `cidr` apply to `tool: network` only'],
    ['port on a file tool', { tool: 'write', port: 443 }, '`host`, `port` and `cidr` apply to `tool: network` only'],
    ['cidr on a file tool', { tool: ['read'], cidr: ['10.0.0.0/8'] }, '`host`, `port` and `cidr` apply to `tool: network` only'],
    ['command on network', { tool: 'network', command: ['curl'] }, '`command` does not apply to `tool: network`; network rules take `host`, `port` and `cidr`'],
    ['path on network', { tool: ['network'], path: 'a/**' }, '`path` does not apply to `tool: network`; network rules take `host`, `port` and `cidr`'],
    ['command and host', { command: ['curl'], host: 'a.example' }, 'a rule has `command` or `host`, not both'],
    ['path and cidr', { path: 'a', cidr: '10.0.0.0/8' }, 'a rule has `path` or `cidr`, not both'],
    ['neither host nor cidr', { tool: 'network' }, 'a network rule needs `host` or `cidr` (or both)'],
    ['a port alone', { port: [443] }, 'a network rule needs `host` or `cidr` (or both)'],
    ['except', { tool: 'network', host: 'a.example', except: ['b.example'] }, 'except: network rules take no `except` (name the hosts and networks a rule is for)'],
    ['a bare *', { tool: 'network', host: '*' }, 'host "*": only one leading "*." is a wildcard (for every host, set defaults.network)'],
    ['an inner *', { tool: 'network', host: 'a.*.example' }, 'host "a.*.example": only one leading "*." is a wildcard (for every host, set defaults.network)'],
    ['two wildcards', { tool: 'network', host: '*.*.example' }, 'host "*.*.example": only one leading "*." is a wildcard (for every host, set defaults.network)'],
    ['a wildcard address', { tool: 'network', host: '*.1.2.3' }, 'host "*.1.2.3": a wildcard names the subdomains of a name, not of an address (use cidr)'],
    ['a host with a port', { tool: 'network', host: 'a.example:443' }, 'host "a.example:443" is not a host name or IP address (write international names in their xn-- form)'],
    ['a non-ASCII host', { tool: 'network', host: 'bücher.example' }, 'host "bücher.example" is not a host name or IP address (write international names in their xn-- form)'],
    ['a label over 63', { tool: 'network', host: `${'a'.repeat(64)}.example` }, `host "${'a'.repeat(64)}.example" is not a host name or IP address (write international names in their xn-- form)`],
  ])('refuse %s, naming the rule', (_name, rule, reason) => {
    expect(loadError(rule)).toBe(`p.yaml: rules[0] (r): ${reason}`);
  });

  it('refuse a CIDR that does not parse', () => {
    expect(loadError({ tool: 'network', cidr: ['10.0.0.0'] })).toMatch(/^p\.yaml: rules\[0\] \(r\): cidr "10\.0\.0\.0" is not ADDRESS\/BITS \(/);
    expect(loadError({ tool: 'network', cidr: ['10.0.0.0/33'] })).toMatch(/^p\.yaml: rules\[0\] \(r\): cidr "10\.0\.0\.0\/33" is not ADDRESS\/BITS/);
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [{ tool: 'network', host: 'a', port: 0 }, /port: a port is a whole number from 1 to 65535$/],
    [{ tool: 'network', host: 'a', port: [443, 70000] }, /port\[1\]: a port is a whole number from 1 to 65535$/],
    [{ tool: 'network', host: 'a', port: 44.3 }, /port: expected a port \(1-65535\) or a non-empty list of ports$/],
    [{ tool: 'network', host: 'a', port: '443' }, /port: expected a port \(1-65535\)/],
    [{ tool: 'network', host: [] }, /host: Too small: expected array to have >=1 items/],
    [{ tool: 'netwrok', host: 'a' }, /tool: expected one of .*, network or a list of them/],
  ])('validate the fields by schema: %j', (rule, message) => {
    expect(loadError(rule)).toMatch(message);
  });

  it('make a rule with only host, cidr or port fields a network rule (no tf-* tools)', () => {
    for (const raw of [{ host: 'a.example' }, { cidr: '10.0.0.0/8' }, { tool: 'network', host: 'a', port: 1 }]) {
      const rules = compiled(raw);
      expect(rules.map((r) => r.kind)).toEqual(['network']);
      expect([...rules[0]!.tools]).toEqual([]);
    }
  });

  it('register the network kind with its own field and way of judging', () => {
    expect(RULE_KINDS.map((k) => [k.kind, k.field, k.judged])).toContainEqual(['network', 'host', 'connections']);
  });
});

describe('network rules sent with a job or session', () => {
  const session = (rules: unknown[]) => () => parsePolicyDocument('job policy', { rules }, 'session');
  const hosts = (n: number, from = 0): string[] => Array.from({ length: n }, (_, k) => `h${from + k}.example`);

  it('are bounded per list (SESSION_LIMITS.alternatives = 128) and in all (allAlternatives = 4096)', () => {
    expect(session([{ id: 'ok', tool: 'network', host: hosts(128), decision: 'forbid' }])).not.toThrow();
    expect(session([{ id: 'big', tool: 'network', host: hosts(129), decision: 'forbid' }])).toThrow(
      'job policy: rules[0] (big): host has 129 entries, at most 128 (limit for a policy sent with a job or session)',
    );
    const many = Array.from({ length: 33 }, (_, k) => ({ id: `r${k}`, tool: 'network', host: hosts(125, k * 125), decision: 'forbid' }));
    expect(session(many)).toThrow("job policy: rules[32] (r32): in all, the policy's network rules exceed 4096 hosts, CIDRs and ports (limit for a policy sent with a job or session)");
  });
});
