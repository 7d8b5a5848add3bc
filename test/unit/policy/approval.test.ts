import { describe, expect, it } from 'vitest';
import {
  decideApproval,
  evaluate,
  grantFor,
  grantsFor,
  NEVER_REASON,
  type ApprovalMode,
  type Decision,
  type Grant,
} from '../../../services/policy/index.ts';
import { bash, file, layersFrom } from './helpers.ts';

const layers = layersFrom({
  global: [
    `version: 1
rules:
  - {id: ls, tool: bash, command: [ls], decision: allow}
  - {id: curl, tool: bash, command: [curl], decision: forbid, justification: no network}
  - {id: npm-install, tool: bash, command: [npm, install], decision: prompt}
  - {id: tf, tool: bash, command: [terraform], decision: prompt}
  - {id: gen, tool: write, path: "gen/**", decision: prompt}
  - {id: out, tool: copy, path: "out/**", decision: prompt}
`,
  ],
});

describe('decideApproval: decision × mode', () => {
  it.each<[string, ApprovalMode, 'run' | 'ask' | 'refuse', string | undefined]>([
    ['ls', 'never', 'run', undefined],
    ['ls', 'on-request', 'run', undefined],
    ['npm install x', 'never', 'refuse', NEVER_REASON],
    ['npm install x', 'on-request', 'ask', undefined],
    ['unknown-tool', 'never', 'refuse', NEVER_REASON], // prompt from the bash default
    ['echo $(id)', 'never', 'refuse', NEVER_REASON], // complex_command
    ['echo $(id)', 'on-request', 'ask', undefined],
  ])('%j under %s → %s', (cmd, mode, action, reason) => {
    const c = bash(cmd);
    const r = decideApproval(evaluate(layers, c), mode, c, []);
    expect(r.action).toBe(action);
    expect(r.reason).toBe(reason);
  });

  it.each<ApprovalMode>(['never', 'on-request'])('forbid is refused in %s mode, even with a grant covering it', (mode) => {
    const c = bash('curl x');
    const grants: Grant[] = [{ tool: 'bash', prefix: ['curl'] }];
    const e = evaluate(layers, c, grants);
    expect(e.decision).toBe('forbid');
    const r = decideApproval(e, mode, c, grants);
    expect(r.action).toBe('refuse');
    expect(r.reason).toContain('no network');
  });

  it('the never reason is the exact text of POLICY.md §4', () => {
    expect(NEVER_REASON).toBe('approval required by policy, but approval mode is never');
  });
});

describe('session grants (approve_for_session)', () => {
  it.each<[string, string[]]>([
    ['npm install left-pad', ['npm', 'install', 'left-pad']], // exact argv (§7), not the rule's prefix
    ['terraform apply -auto-approve', ['terraform', 'apply', '-auto-approve']],
    ['make deploy now', ['make', 'deploy', 'now']],
    ['ls && make deploy', ['make', 'deploy']], // the part that prompted
  ])('grantFor(%j) → exact argv %j', (cmd, argv) => {
    const c = bash(cmd);
    expect(grantFor(c, evaluate(layers, c))).toEqual({ tool: 'bash', argv });
  });

  it('grantFor without evaluation details grants the exact argv too', () => {
    const c = bash('npm install left-pad');
    const plain = JSON.parse(JSON.stringify(evaluate(layers, c)));
    expect(grantFor(c, plain)).toEqual({ tool: 'bash', argv: ['npm', 'install', 'left-pad'] });
  });

  it('grantsFor lists every prompting part once', () => {
    const c = bash('npm install a && terraform plan && npm install a && ls');
    expect(grantsFor(c, evaluate(layers, c))).toEqual([
      { tool: 'bash', argv: ['npm', 'install', 'a'] },
      { tool: 'bash', argv: ['terraform', 'plan'] },
    ]);
  });

  it.each<[string, Grant[], Decision, 'run' | 'refuse']>([
    ['npm install other', [{ tool: 'bash', prefix: ['npm', 'install'] }], 'allow', 'run'],
    ['npm installx', [{ tool: 'bash', prefix: ['npm', 'install'] }], 'prompt', 'refuse'],
    ['npm install a && terraform plan', [{ tool: 'bash', prefix: ['npm', 'install'] }], 'prompt', 'refuse'],
    ['npm install a && terraform plan', [{ tool: 'bash', prefix: ['npm', 'install'] }, { tool: 'bash', prefix: ['terraform'] }], 'allow', 'run'],
    ['npm install a && curl x', [{ tool: 'bash', prefix: ['npm', 'install'] }], 'forbid', 'refuse'],
    ['echo $(npm install a)', [{ tool: 'bash', prefix: ['npm', 'install'] }, { tool: 'bash', prefix: ['echo'] }], 'prompt', 'refuse'],
    ['npm install a', [{ tool: 'write', path: 'npm' }], 'prompt', 'refuse'],
    ['npm install a', [{ tool: 'bash', prefix: [] }], 'prompt', 'refuse'], // an empty prefix grants nothing
    ['npm install a', [{ tool: 'bash', argv: ['npm', 'install', 'a'] }], 'allow', 'run'],
    ['npm install a b', [{ tool: 'bash', argv: ['npm', 'install', 'a'] }], 'prompt', 'refuse'], // exact: no extra argument
    ['npm install', [{ tool: 'bash', argv: ['npm', 'install', 'a'] }], 'prompt', 'refuse'],
  ])('%j with %j → %s, never mode → %s', (cmd, grants, decision, action) => {
    const c = bash(cmd);
    const e = evaluate(layers, c, grants);
    expect(e.decision).toBe(decision);
    expect(decideApproval(e, 'never', c, grants).action).toBe(action);
    // decideApproval applies grants itself too, for an evaluation made without them
    expect(decideApproval(evaluate(layers, c), 'never', c, grants).action).toBe(action);
  });

  it('file grants: same tool on the same normalised path', () => {
    const c = file('write', './gen//a.ts');
    const g = grantFor(c, evaluate(layers, c));
    expect(g).toEqual({ tool: 'write', path: 'gen/a.ts' });
    expect(evaluate(layers, file('write', 'gen/a.ts'), [g]).decision).toBe('allow');
    expect(evaluate(layers, file('write', 'gen/b.ts'), [g]).decision).toBe('prompt');
    const other = file('append', 'gen/a.ts');
    expect(decideApproval(evaluate(layers, other), 'never', other, [g]).action).toBe('run'); // append has no prompt rule
    expect(decideApproval(evaluate(layers, c), 'never', c, [g]).action).toBe('run');
    expect(decideApproval(evaluate(layers, c), 'never', c, [{ tool: 'edit', path: 'gen/a.ts' }]).action).toBe('refuse');
  });

  it('copy grants cover the same path and dest only', () => {
    const c = file('copy', 'a.txt', 'out/a.txt');
    const g = grantFor(c, evaluate(layers, c));
    expect(g).toEqual({ tool: 'copy', path: 'a.txt', dest: 'out/a.txt' });
    expect(evaluate(layers, c, [g]).decision).toBe('allow');
    expect(evaluate(layers, file('copy', 'a.txt', 'out/b.txt'), [g]).decision).toBe('prompt');
  });
});
