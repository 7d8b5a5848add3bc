// `thinkflow policy check --net HOST[:PORT]` end to end (POLICY.md §8): the
// real bin, a temp policy dir, the one JSON line and the exit codes of the
// other checks (0 for every decision, 2 for bad arguments or files).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Run } from './helpers.ts';

let base: string;
let dir: string;

const GLOBAL = `version: 1
rules:
  - id: internal-api
    tool: network
    host: ["api.internal.example", "*.svc.example"]
    port: [443, 8000]
    decision: allow
    justification: the build fetches from the internal API
    examples:
      match: ["api.internal.example:443", "x.svc.example:8000"]
      not_match: ["evil.example:443", "svc.example:443"]
`;
const PROJECT = 'version: 1\nrules:\n  - {id: npm, tool: network, host: [registry.npmjs.org, "127.0.0.1"], port: [443], decision: allow, justification: npm mirror}\n';

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'tf-policy-net-'));
  dir = join(base, 'policies');
  await mkdir(join(dir, 'global'), { recursive: true });
  await mkdir(join(dir, 'projects', 'web'), { recursive: true });
  await writeFile(join(dir, 'global', 'net.yaml'), GLOBAL);
  await writeFile(join(dir, 'global', 'v6.yaml'), 'version: 1\nrules:\n  - {id: v6-cache, tool: network, host: ["fd00::1"], decision: allow, justification: cache}\n');
  await writeFile(join(dir, 'projects', 'web', 'npm.yaml'), PROJECT);
  await writeFile(join(base, 'session.yaml'), 'version: 1\nrules:\n  - {id: s-no, tool: network, host: ["*.svc.example"], decision: forbid, justification: not now}\n');
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const check = (...args: string[]): Promise<Run> => run(['policy', 'check', '--policy-dir', dir, ...args], {});

function onlyLine(r: Run): unknown {
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout.endsWith('\n') && r.stdout.indexOf('\n') === r.stdout.length - 1).toBe(true);
  return JSON.parse(r.stdout);
}

describe('thinkflow policy check --net', () => {
  it('prints the decision, every matched rule and the reason; PORT defaults to 443', async () => {
    const [api, wild, none, session, v6] = await Promise.all([
      check('--net', 'api.internal.example'),
      check('--net', 'a.b.svc.example:8000'),
      check('--net', 'evil.example:80'),
      check('--net', 'a.svc.example:443', '--session-rules', join(base, 'session.yaml')),
      check('--net', '[fd00::1]:8443'),
    ]);
    const out = onlyLine(api);
    expect(Object.keys(out as object)).toEqual(['decision', 'matched_rules', 'reason']);
    expect(out).toEqual({
      decision: 'allow',
      matched_rules: [{ id: 'internal-api', layer: 'global', decision: 'allow', justification: 'the build fetches from the internal API' }],
      reason: 'allow by rule internal-api (global) for `api.internal.example:443`: the build fetches from the internal API',
    });
    expect(onlyLine(wild)).toMatchObject({ decision: 'allow' });
    expect(onlyLine(none)).toEqual({ decision: 'forbid', matched_rules: [], reason: 'no rule matched `evil.example:80`; network default (built-in): forbid' });
    expect(onlyLine(session)).toEqual({
      decision: 'forbid',
      matched_rules: [
        { id: 'internal-api', layer: 'global', decision: 'allow', justification: 'the build fetches from the internal API' },
        { id: 's-no', layer: 'session', decision: 'forbid', justification: 'not now' },
      ],
      reason: 'forbid by rule s-no (session) for `a.svc.example:443`: not now',
    });
    // fd00::/8 is private, and the rule naming it is global: it opens it.
    expect(onlyLine(v6)).toMatchObject({ decision: 'allow', reason: 'allow by rule v6-cache (global) for `[fd00::1]:8443`: cache' });
  });

  it('refuses a special address a project rule names, and reads the project layer', async () => {
    const [lo, npm, metadata] = await Promise.all([
      check('--project', 'web', '--net', '127.0.0.1'),
      check('--project', 'web', '--net', 'registry.npmjs.org:443'),
      check('--net', '169.254.169.254:80'),
    ]);
    expect(onlyLine(lo)).toEqual({
      decision: 'forbid',
      matched_rules: [{ id: 'npm', layer: 'project', decision: 'allow', justification: 'npm mirror' }],
      reason: '`127.0.0.1:443` is a special address (loopback); only a global-layer network rule naming it (host or cidr) can open it',
    });
    expect(onlyLine(npm)).toMatchObject({ decision: 'allow', reason: 'allow by rule npm (project) for `registry.npmjs.org:443`: npm mirror' });
    expect(onlyLine(metadata)).toMatchObject({ decision: 'forbid' });
  });

  it.each<[string, string[], RegExp]>([
    ['a bad port', ['--net', 'a.example:http'], /--net a\.example:http: port "http" is not a number from 1 to 65535/],
    ['a bad host', ['--net', 'a b'], /--net a b: "a b" is not a host name or IP address/],
    ['an unclosed bracket', ['--net', '[::1:443'], /an IPv6 address opened with \[ is not closed/],
    ['--net with --cmd', ['--net', 'a.example', '--cmd', 'ls'], /--net checks a connection; it takes no --cmd/],
    ['--tool network', ['--tool', 'network', '--path', 'x'], /connections are checked with --net HOST\[:PORT\]/],
  ])('exits 2 for %s', async (_name, args, message) => {
    const r = await check(...args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it('exits 2 naming the rule when a network example fails at load', async () => {
    const bad = join(base, 'bad');
    await mkdir(join(bad, 'global'), { recursive: true });
    await writeFile(join(bad, 'global', 'x.yaml'), 'version: 1\nrules:\n  - {id: w, tool: network, host: ["*.a.example"], decision: allow, examples: {match: ["a.example:443"]}}\n');
    const r = await run(['policy', 'check', '--policy-dir', bad, '--net', 'a.example'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/global\/x\.yaml: rules\[0\] \(w\): example "a\.example:443" is listed in match but the rule does not match it/);
  });

  it('documents --net and its default port in the usage text', async () => {
    const r = await run(['policy', '--help'], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--net HOST\[:PORT\]/);
    expect(r.stdout).toMatch(/PORT defaults to 443/);
  });
});
