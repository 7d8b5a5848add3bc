import { describe, expect, it } from 'vitest';
import { indirectTarget } from '../../../services/pipeline/indirect-target.ts';
import { headUtf8 } from '../../../services/pipeline/approval-context.ts';

// Which workspace file a bash command runs (an approval's `indirect`).

describe('indirectTarget', () => {
  it.each([
    ['bash deploy.sh', { runner: 'bash', path: 'deploy.sh' }],
    ['sh ./scripts/../deploy.sh prod', { runner: 'sh', path: 'deploy.sh' }],
    ['bash -eux -o pipefail run.sh', { runner: 'bash', path: 'run.sh' }],
    ['/bin/bash "my script.sh"', { runner: 'bash', path: 'my script.sh' }],
    ['bash /workspace/x.sh', { runner: 'bash', path: 'x.sh' }],
    ['python3 -u tools/gen.py --out a', { runner: 'python3', path: 'tools/gen.py' }],
    ['python -W ignore gen.py', { runner: 'python3', path: 'gen.py' }],
    ['node --env-file .env main.mjs', { runner: 'node', path: 'main.mjs' }],
    ['npm test', { runner: 'npm', path: 'package.json', script: 'test' }],
    ['npm t', { runner: 'npm', path: 'package.json', script: 'test' }],
    ['npm run build -- --fix', { runner: 'npm', path: 'package.json', script: 'build' }],
    ['npm run-script --silent lint', { runner: 'npm', path: 'package.json', script: 'lint' }],
    ['npm start', { runner: 'npm', path: 'package.json', script: 'start' }],
  ])('%s runs a file', (cmd, want) => {
    expect(indirectTarget(cmd)).toEqual(want);
  });

  it.each([
    'bash', 'bash -c "rm -rf /"', 'bash -ec "ls"', 'bash -s', 'sh < deploy.sh', 'python3 -m http.server', 'python3 -c "print(1)"', 'python3 -',
    'node -e "1"', 'node --print 1', 'node --require ./setup.js main.mjs', 'node', 'npm install', 'npm run', 'ls deploy.sh', 'cd sub && bash deploy.sh', 'bash a.sh; bash b.sh',
    'bash ../outside.sh', 'bash /etc/profile', 'bash .', 'FOO=1 bash x.sh', 'echo $(bash x.sh)',
  ])('%s runs no workspace file', (cmd) => {
    expect(indirectTarget(cmd)).toBeNull();
  });
});

describe('headUtf8', () => {
  it('keeps the start, never cut inside a character, and says so', () => {
    expect(headUtf8(Buffer.from('abc'), 3)).toEqual({ content: 'abc', truncated: false });
    expect(headUtf8(Buffer.from('abcd'), 3)).toEqual({ content: 'abc', truncated: true });
    expect(headUtf8(Buffer.from('a€b'), 3)).toEqual({ content: 'a', truncated: true }); // € is 3 bytes: 4 needed
    expect(headUtf8(Buffer.from('a€b'), 4)).toEqual({ content: 'a€', truncated: true });
    expect(headUtf8(Buffer.from('😀😀'), 5)).toEqual({ content: '😀', truncated: true });
  });
});
