import { describe, expect, it } from 'vitest';
import { evaluate, type Decision } from '../../../services/policy/index.ts';
import { innerCommands, unwrap } from '../../../services/policy/wrappers.ts';
import { bash, layersFrom } from './helpers.ts';

describe('innerCommands: what a wrapper runs', () => {
  it.each<[string[], string[][]]>([
    [['env', 'FOO=1', 'curl', 'x'], [['curl', 'x']]],
    [['env', '-i', '-u', 'X', 'curl'], [['curl']]],
    [['/usr/bin/env', 'curl'], [['curl']]],
    [['nice', '-n', '5', 'rm', '-rf', '/'], [['rm', '-rf', '/']]],
    [['nice', '-5', 'ls'], [['ls']]],
    [['nohup', 'wget', 'x'], [['wget', 'x']]],
    [['time', '-p', 'make'], [['make']]],
    [['timeout', '-s', 'KILL', '5', 'wget', 'y'], [['wget', 'y']]],
    [['timeout', '5'], []],
    [['xargs', '-I', '{}', 'rm', '{}'], [['rm', '{}']]],
    [['xargs', '-0', 'rm'], [['rm']]],
    [['xargs', '-i', 'rm', '{}'], [['rm', '{}']]],
    [['exec', '-a', 'name', 'curl'], [['curl']]],
    [['command', 'curl', 'x'], [['curl', 'x']]],
    [['command', '-v', 'curl'], []], // a query, runs nothing
    [['bash', '-c', 'curl x && ls'], [['curl', 'x'], ['ls']]],
    [['bash', 'script.sh'], []], // reads a file we cannot see
    [['eval', 'curl', 'x'], [['curl', 'x']]],
    [['env', 'nice', 'curl', 'x'], [['nice', 'curl', 'x'], ['curl', 'x']]],
    [['env'], []],
    [['ls', '-la'], []],
  ])('%j → %j', (argv, inner) => {
    expect(innerCommands(argv)).toEqual(inner);
  });

  // Not fully understood (§7): complex, and every argument is read for restrictions.
  it.each<[string[], string[]]>([
    [['sh', '-ec', 'rm -rf /'], ['rm', '-rf', '/']],
    [['bash', '-o', 'pipefail', '-c', 'wget y'], ['wget', 'y']],
    [['bash', '-lc', 'echo $(curl x)'], ['curl', 'x']],
    [['bash', '-c', '--', 'curl x'], ['curl', 'x']],
    [['env', '-S', 'curl x'], ['curl', 'x']],
    [['timeout', '--weird', '5', 'curl', 'x'], ['curl', 'x']],
  ])('%j is complex and still yields %j', (argv, inner) => {
    const u = unwrap(argv);
    expect(u.complex).toBeDefined();
    expect(u.commands.map((c) => c.argv)).toContainEqual(inner);
  });

  it('a shell reading stdin is complex', () => {
    expect(unwrap(['bash']).complex).toMatch(/standard input/);
  });

  it('bounds the readings of a long not-understood invocation', () => {
    const argv = ['env', '-X', ...Array.from({ length: 200 }, (_, k) => `env -Y a${k}`)];
    const t0 = performance.now();
    const u = unwrap(argv);
    expect(performance.now() - t0).toBeLessThan(200);
    expect(u.commands.length).toBeLessThanOrEqual(256);
  });

  it('stops at a fixed depth', () => {
    let script = 'curl x';
    for (let k = 0; k < 10; k++) script = `bash -c ${JSON.stringify(script)}`;
    expect(innerCommands(['bash', '-c', script]).length).toBeLessThanOrEqual(4);
  });
});

describe('evaluate: wrappers pass restrictions through, never an allow', () => {
  const layers = layersFrom({
    global: [
      `version: 1
rules:
  - {id: curl, tool: bash, command: [curl], decision: forbid}
  - {id: npm-install, tool: bash, command: [npm, install], decision: prompt}
  - {id: make, tool: bash, command: [make], decision: allow}
  - {id: xargs, tool: bash, command: [xargs], decision: allow}
`,
    ],
  });
  it.each<[string, Decision, string[]]>([
    ['env FOO=1 curl x', 'forbid', ['curl']],
    ['nice -n 5 curl x', 'forbid', ['curl']],
    ['bash -c "curl x"', 'forbid', ['curl']],
    ["sh -c 'ls; curl x'", 'forbid', ['curl']],
    ['find . | xargs curl', 'forbid', ['curl', 'xargs']], // (rule order) an allowed wrapper does not launder its command
    ['timeout 5 npm install x', 'prompt', ['npm-install']],
    ['xargs make', 'allow', ['xargs']],
    ['env make', 'prompt', []], // inner allow rules do not count: env itself is unmatched
    ['echo $(env curl x)', 'forbid', ['curl']],
    ['echo curl x', 'prompt', []], // not a wrapper
  ])('%j → %s', (cmd, decision, ids) => {
    const e = evaluate(layers, bash(cmd));
    expect(e.decision).toBe(decision);
    expect(e.matched_rules.map((r) => r.id)).toEqual(ids);
  });
});
