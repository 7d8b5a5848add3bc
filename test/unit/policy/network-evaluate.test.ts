// Connections against the layered policy (POLICY.md §8): strictest rule over
// all layers, the network default of the most specific layer (else forbid),
// submitters only tighten, and only the global layer opens special addresses.
import { describe, expect, it } from 'vitest';
import {
  addressAllowedByGlobalRule, checkDialAddress, evaluateConnection, evaluateNetwork, looseningIn, parsePolicyDocument, PolicyLoosensError,
} from '../../../services/policy/index.ts';
import { layersFrom } from './helpers.ts';

const rule = (id: string, decision: string, fields: string, justification = ''): string =>
  `  - {id: ${id}, tool: network, ${fields}, decision: ${decision}${justification ? `, justification: ${justification}` : ''}}\n`;
const file = (...rules: string[]): string => `version: 1\nrules:\n${rules.join('')}`;
const ids = (e: { matched_rules: { id: string }[] }): string[] => e.matched_rules.map((r) => r.id);

describe('evaluateNetwork: rules over all layers', () => {
  it('forbids by the built-in network default when nothing matches', () => {
    expect(evaluateNetwork(layersFrom({}), { host: 'a.example', port: 443 })).toEqual({
      decision: 'forbid', matched_rules: [], reason: 'no rule matched `a.example:443`; network default (built-in): forbid',
    });
  });

  it('names the rule, its layer, the connection and the justification', () => {
    const layers = layersFrom({ global: [file(rule('api', 'allow', 'host: [API.example], port: 443', 'the build needs it'))] });
    expect(evaluateNetwork(layers, { host: 'api.EXAMPLE', port: 443 })).toEqual({
      decision: 'allow',
      matched_rules: [{ id: 'api', layer: 'global', decision: 'allow', justification: 'the build needs it' }],
      reason: 'allow by rule api (global) for `api.example:443`: the build needs it',
    });
    expect(evaluateNetwork(layers, { host: 'api.example', port: 80 }).decision).toBe('forbid');
    const v6 = layersFrom({ global: [file(rule('v6', 'prompt', 'host: ["2001:db8::1"]'))] });
    expect(evaluateNetwork(v6, { host: '[2001:db8:0::1]', port: 8443 }).reason).toBe('prompt by rule v6 (global) for `[2001:db8::1]:8443`');
  });

  it('lets the strictest matching rule win, listing looser ones too', () => {
    const layers = layersFrom({
      global: [file(rule('g-allow', 'allow', 'host: ["*.example"]'))],
      project: [file(rule('p-prompt', 'prompt', 'host: [a.example]'))],
      session: [file(rule('s-forbid', 'forbid', 'host: [a.example], port: [22]'))],
    });
    const a443 = evaluateNetwork(layers, { host: 'a.example', port: 443 });
    expect([a443.decision, ids(a443), a443.reason]).toEqual(['prompt', ['g-allow', 'p-prompt'], 'prompt by rule p-prompt (project) for `a.example:443`']);
    const a22 = evaluateNetwork(layers, { host: 'a.example', port: 22 });
    expect([a22.decision, ids(a22)]).toEqual(['forbid', ['g-allow', 'p-prompt', 's-forbid']]);
    expect(evaluateNetwork(layers, { host: 'b.example', port: 22 }).decision).toBe('allow');
  });

  it('never lets a later layer loosen a global forbid', () => {
    const layers = layersFrom({
      global: [file(rule('no-paste', 'forbid', 'host: [paste.example]', 'exfiltration'))],
      project: [file(rule('paste', 'allow', 'host: [paste.example]'))],
    });
    const e = evaluateNetwork(layers, { host: 'paste.example', port: 443 });
    expect([e.decision, e.reason]).toEqual(['forbid', 'forbid by rule no-paste (global) for `paste.example:443`: exfiltration']);
  });

  it('matches cidr and address rules against the resolved address when given', () => {
    const layers = layersFrom({ global: [file(rule('no-db', 'forbid', 'cidr: [203.0.113.0/24]'), rule('all', 'allow', 'host: ["*.example"]'))] });
    expect(evaluateNetwork(layers, { host: 'db.example', port: 5432 }).decision).toBe('allow');
    expect(evaluateNetwork(layers, { host: 'db.example', port: 5432, address: '203.0.113.7' }).decision).toBe('forbid');
    expect(evaluateNetwork(layers, { host: '203.0.113.7', port: 5432 }).reason).toBe('forbid by rule no-db (global) for `203.0.113.7:5432`');
  });

  it.each<[object, string]>([
    [{ host: 'a b', port: 443 }, 'invalid_host: "a b" is not a host name or IP address'],
    [{ host: '', port: 443 }, 'invalid_host: "" is not a host name or IP address'],
    [{ host: 'a.example', port: 0 }, 'invalid_port: 0 is not a port from 1 to 65535'],
    [{ host: 'a.example', port: 65536 }, 'invalid_port: 65536 is not a port from 1 to 65535'],
    [{ host: 'a.example', port: 1.5 }, 'invalid_port: 1.5 is not a port from 1 to 65535'],
    [{ host: 'a.example', port: 443, address: 'a.example' }, 'invalid_address: "a.example" is not an IP address'],
  ])('forbids an unreadable connection %j with no rule', (target, reason) => {
    const layers = layersFrom({ global: ['version: 1\ndefaults: {network: allow}\n'] });
    expect(evaluateNetwork(layers, target as never)).toEqual({ decision: 'forbid', matched_rules: [], reason });
  });
});

describe('evaluateNetwork: defaults.network', () => {
  const dflt = (d: string) => `version: 1\ndefaults: {network: ${d}}\n`;
  it.each<[string, Parameters<typeof layersFrom>[0], string, string]>([
    ['global sets it', { global: [dflt('prompt')] }, 'prompt', 'global layer'],
    ['the most specific layer wins', { global: [dflt('forbid')], project: [dflt('allow')] }, 'allow', 'project layer'],
    ['a session default', { global: [dflt('allow')], project: [dflt('allow')], session: [dflt('prompt')] }, 'prompt', 'session layer'],
    ['two files of one layer: the stricter', { project: [dflt('allow'), dflt('prompt')] }, 'prompt', 'project layer'],
    ['a layer without it does not count', { global: [dflt('prompt')], project: ['version: 1\ndefaults: {bash: allow}\n'] }, 'prompt', 'global layer'],
  ])('%s', (_name, texts, decision, source) => {
    expect(evaluateNetwork(layersFrom(texts), { host: 'x.example', port: 443 }).reason).toBe(`no rule matched \`x.example:443\`; network default (${source}): ${decision}`);
  });

  it('is a fallback: a matching rule decides over any default', () => {
    const layers = layersFrom({ global: [dflt('allow')], project: [file(rule('ask', 'prompt', 'host: [a.example]'))] });
    expect(evaluateNetwork(layers, { host: 'a.example', port: 1 }).decision).toBe('prompt');
    const open = layersFrom({ global: [dflt('forbid')], project: [file(rule('npm', 'allow', 'host: [registry.npmjs.org], port: [443]'))] });
    expect(evaluateNetwork(open, { host: 'registry.npmjs.org', port: 443 }).decision).toBe('allow');
  });
});

describe('evaluateNetwork: session grants', () => {
  const layers = layersFrom({ global: [file(rule('ask', 'prompt', 'host: [a.example, "::1"]'), rule('no', 'forbid', 'host: [b.example]'))] });
  it('satisfy a prompt for the same host:port only', () => {
    const e = evaluateNetwork(layers, { host: 'A.example', port: 443 }, [{ host: 'a.example', port: 443 }]);
    expect([e.decision, ids(e), e.reason]).toEqual(['allow', ['ask'], 'prompt for `a.example:443` satisfied by a session grant']);
    expect(evaluateNetwork(layers, { host: 'a.example', port: 444 }, [{ host: 'a.example', port: 443 }]).decision).toBe('prompt');
    expect(evaluateNetwork(layers, { host: '[::1]', port: 443 }, [{ host: '0::1', port: 443 }]).decision).toBe('allow');
  });

  it('never satisfy a forbid', () => {
    expect(evaluateNetwork(layers, { host: 'b.example', port: 443 }, [{ host: 'b.example', port: 443 }]).decision).toBe('forbid');
  });
});

describe('submitters only tighten network access', () => {
  const operator = layersFrom({ global: [file(rule('api', 'allow', 'host: [api.example]'))] });
  const refusal = (text: string, layers = operator): PolicyLoosensError => {
    try {
      looseningIn(parsePolicyDocument('job policy', text, 'session'), layers);
    } catch (err) {
      if (err instanceof PolicyLoosensError) return err;
      throw err;
    }
    throw new Error('expected policy_loosens');
  };

  it('refuses an allow network rule, naming it', () => {
    const err = refusal(file(rule('mine', 'allow', 'host: [evil.example]')));
    expect(err.code).toBe('policy_loosens');
    expect(err.message).toBe("job policy: rules[0] (mine): an allow rule would loosen the operator's policy; a submitter's policy may add prompt and forbid rules only");
  });

  it.each(['allow', 'prompt'])('refuses defaults.network: %s over the built-in forbid', (d) => {
    expect(refusal(`version: 1\ndefaults: {network: ${d}}\n`).message).toBe(
      `job policy: defaults.network: ${d} is looser than forbid (built-in); a submitter's policy may only make defaults stricter`,
    );
  });

  it('accepts prompt and forbid network rules and a default no looser than the operator’s', () => {
    const ok = file(rule('ask', 'prompt', 'host: [api.example]'), rule('no', 'forbid', 'cidr: [0.0.0.0/0]'));
    expect(() => looseningIn(parsePolicyDocument('job policy', ok, 'session'), operator)).not.toThrow();
    const open = layersFrom({ project: ['version: 1\ndefaults: {network: prompt}\n'] });
    expect(() => looseningIn(parsePolicyDocument('job policy', 'version: 1\ndefaults: {network: prompt}\n', 'session'), open)).not.toThrow();
    expect(refusal('version: 1\ndefaults: {network: allow}\n', open).message).toMatch(/defaults\.network: allow is looser than prompt \(project layer\)/);
  });
});

describe('special addresses: only a global rule opens them', () => {
  const at = (layer: 'global' | 'project' | 'session', ...rules: string[]) => layersFrom({ [layer]: [file(...rules)] });
  const opener = rule('lan', 'allow', 'host: ["10.0.0.5", "fd00::5"], cidr: [192.168.7.0/24], port: [8080]', 'build cache');

  it('addressAllowedByGlobalRule: a global allow naming the literal address or a CIDR with it, on a port it takes', () => {
    const layers = at('global', opener);
    const lan = { id: 'lan', layer: 'global', decision: 'allow', justification: 'build cache' };
    expect(addressAllowedByGlobalRule(layers, '10.0.0.5', 8080)).toEqual({ allowed: true, rule: lan });
    expect(addressAllowedByGlobalRule(layers, '::ffff:10.0.0.5', 8080)).toEqual({ allowed: true, rule: lan });
    expect(addressAllowedByGlobalRule(layers, 'fd00:0::5', 8080)).toEqual({ allowed: true, rule: lan });
    expect(addressAllowedByGlobalRule(layers, '192.168.7.200', 8080)).toEqual({ allowed: true, rule: lan });
    expect(addressAllowedByGlobalRule(layers, '10.0.0.5', 443)).toEqual({ allowed: false });
    expect(addressAllowedByGlobalRule(layers, '10.0.0.6', 8080)).toEqual({ allowed: false });
    expect(addressAllowedByGlobalRule(layers, 'not-an-ip', 8080)).toEqual({ allowed: false });
  });

  it('never counts project or session rules, forbid or prompt rules, or rules naming hosts by name', () => {
    expect(addressAllowedByGlobalRule(at('project', opener), '10.0.0.5', 8080).allowed).toBe(false);
    expect(addressAllowedByGlobalRule(at('session', opener), '10.0.0.5', 8080).allowed).toBe(false);
    expect(addressAllowedByGlobalRule(at('global', rule('p', 'prompt', 'host: ["10.0.0.5"]')), '10.0.0.5', 80).allowed).toBe(false);
    expect(addressAllowedByGlobalRule(at('global', rule('n', 'allow', 'host: [localhost, "*.internal"]')), '127.0.0.1', 80).allowed).toBe(false);
  });

  it('checkDialAddress: public passes, special needs the global rule, garbage never dials', () => {
    const layers = at('global', opener);
    expect(checkDialAddress(layers, '8.8.8.8', 443)).toEqual({ allowed: true, special: null, reason: '`8.8.8.8:443` is a public address' });
    expect(checkDialAddress(layers, '10.0.0.5', 8080)).toEqual({
      allowed: true, special: 'private', rule: { id: 'lan', layer: 'global', decision: 'allow', justification: 'build cache' },
      reason: '`10.0.0.5:8080` is a special address (private), opened by rule lan (global)',
    });
    expect(checkDialAddress(layers, '169.254.169.254', 80)).toEqual({
      allowed: false, special: 'metadata', reason: '`169.254.169.254:80` is a special address (metadata); only a global-layer network rule naming it (host or cidr) can open it',
    });
    expect(checkDialAddress(layers, '::1', 8080).reason).toBe('`[::1]:8080` is a special address (loopback); only a global-layer network rule naming it (host or cidr) can open it');
    expect(checkDialAddress(layers, 'x', 1)).toEqual({ allowed: false, special: 'invalid', reason: '`x:1` is not an IP address' });
  });

  it('evaluateConnection: a project allow cannot open a special address, a global one can', () => {
    const project = at('project', rule('p-lo', 'allow', 'host: ["127.0.0.1", app.example]'));
    const e = evaluateConnection(project, { host: '127.0.0.1', port: 443 });
    expect([e.decision, ids(e), e.reason]).toEqual(['forbid', ['p-lo'], '`127.0.0.1:443` is a special address (loopback); only a global-layer network rule naming it (host or cidr) can open it']);
    expect(evaluateConnection(project, { host: 'app.example', port: 443 }).decision).toBe('allow');
    expect(evaluateConnection(project, { host: 'app.example', port: 443, address: '10.1.1.1' }).decision).toBe('forbid');
    expect(evaluateConnection(project, { host: 'app.example', port: 443, address: '93.184.215.14' }).decision).toBe('allow');
    const global = at('global', rule('g-lo', 'allow', 'host: ["127.0.0.1"]'));
    expect(evaluateConnection(global, { host: '127.0.0.1', port: 443 }).reason).toBe('allow by rule g-lo (global) for `127.0.0.1:443`');
  });

  it('evaluateConnection keeps a rule forbid as it is', () => {
    const layers = at('global', rule('no', 'forbid', 'cidr: [10.0.0.0/8]', 'lan'));
    expect(evaluateConnection(layers, { host: '10.1.1.1', port: 1 }).reason).toBe('forbid by rule no (global) for `10.1.1.1:1`: lan');
  });
});
