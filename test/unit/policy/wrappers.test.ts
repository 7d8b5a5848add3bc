import { describe, expect, it } from 'vitest';
import { evaluate, type Decision } from '../../../services/policy/index.ts';
import { innerCommands } from '../../../services/policy/wrappers.ts';
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
    [['sh', '-ec', 'rm -rf /'], [['rm', '-rf', '/']]],
    [['bash', '-o', 'pipefail', '-c', 'wget y'], [['wget', 'y']]],
    [['bash', '-lc', 'echo $(curl x)'], [['curl', 'x'], ['echo', '']]],
    [['bash', 'script.sh'], []], // reads a file we cannot see
    [['eval', 'curl', 'x'], [['curl', 'x']]],
    [['env', 'nice', 'curl', 'x'], [['nice', 'curl', 'x'], ['curl', 'x']]],
    [['env'], []],
    [['ls', '-la'], []],
  ])('%j → %j', (argv, inner) => {
    expect(innerCommands(argv)).toEqual(inner);
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
