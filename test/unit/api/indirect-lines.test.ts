import { describe, expect, it } from 'vitest';
import { commandLines, MAX_LINES, scriptLines } from '../../../services/api/card/indirect-lines.ts';
import type { BashExplanation } from '../../../services/policy/index.ts';

// A shell script's lines on an approval card: the lines that run something, each explained.

const explain = (cmd: string): BashExplanation => ({ complex: null, segments: [{ text: cmd, argv: cmd.split(' '), decision: cmd.startsWith('rm') ? 'prompt' : 'allow', matched_rules: [], reason: 'r' }] });
const gate = { explainBash: (_s: unknown, cmd: string) => explain(cmd) };
const session = { session_id: 's', owner: null, project: null, approval: 'on-request', policy: null, job_id: null, created_at: '', deleted_at: null } as never;
const file = (content: string, runner: 'bash' | 'npm' | 'python3' = 'bash', truncated = false) => ({ path: 'x.sh', runner, content, bytes: content.length, truncated });

describe('commandLines', () => {
  it('leaves out blank lines, comments and the shebang; joins continued lines; skips a here-document body', () => {
    const script = [
      '#!/bin/bash', 'set -e', '', '  # a comment', 'rm -rf ./data', 'curl -X POST \\', '  https://prod.example/deploy',
      'cat > notes.txt <<EOF', 'rm -rf / is text here', 'EOF', 'cat <<-\'END\'', '\tnot a command', '\tEND', 'echo done',
    ].join('\n');
    expect([...commandLines(script)]).toEqual([
      { line: 2, text: 'set -e' }, { line: 5, text: 'rm -rf ./data' }, { line: 6, text: 'curl -X POST    https://prod.example/deploy' },
      { line: 8, text: 'cat > notes.txt <<EOF' }, { line: 11, text: 'cat <<-\'END\'' }, { line: 14, text: 'echo done' },
    ]);
  });
});

describe('scriptLines', () => {
  it('explains each line of a shell script, and an npm script as one line; not other programs', () => {
    const got = scriptLines(gate, session, file('ls\nrm -rf ./data\n'))!;
    expect(got.lines.map((l) => [l.line, l.text, l.bash.segments[0]!.decision])).toEqual([[1, 'ls', 'allow'], [2, 'rm -rf ./data', 'prompt']]);
    expect(got.truncated).toBe(false);
    expect(scriptLines(gate, session, file('node a.js && rm x', 'npm'))!.lines).toHaveLength(1);
    expect(scriptLines(gate, session, file('import os', 'python3'))).toBeNull();
  });

  it('is bounded: past MAX_LINES lines, or a very long line, it says not every line is shown', () => {
    const many = scriptLines(gate, session, file(Array.from({ length: MAX_LINES + 5 }, (_, i) => `echo ${i}`).join('\n')))!;
    expect(many.lines).toHaveLength(MAX_LINES);
    expect(many.truncated).toBe(true);
    const long = scriptLines(gate, session, file(`echo ${'x'.repeat(5000)}\nls`))!;
    expect(long.lines.map((l) => l.text)).toEqual(['ls']);
    expect(long.truncated).toBe(true);
    expect(scriptLines(gate, session, file('ls', 'bash', true))!.truncated).toBe(true);
  });
});
