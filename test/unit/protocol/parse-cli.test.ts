// `thinkflow parse`: the JSON lines of API.md, identical at every chunk size.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'tf-parse-'));
const run = (...args: string[]) => spawnSync(process.execPath, ['bin/thinkflow.mjs', 'parse', ...args], { encoding: 'utf8' });
const lines = (out: string) => out.trim().split('\n').map((l) => JSON.parse(l));

describe('thinkflow parse', () => {
  it('prints commands, errors and the visible text as JSON lines, in completion order', () => {
    const file = join(dir, 'doc.txt');
    writeFileSync(file, 'Hi <tf-write id="1" path="a.txt">\nx€\n</tf-write><tf-bash id="2" cmd="ls" timeout="5"/><tf-nope id="3"/> `<tf-mkdir id="4" path="q"/>` bye <tf-read id="5" path="r">');
    const r = run(file);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([
      '{"type":"command","stream":"text","command":{"id":"1","tool":"write","path":"a.txt","content":"x€\\n","need_result":false}}',
      '{"type":"command","stream":"text","command":{"id":"2","tool":"bash","cmd":"ls","need_result":false,"timeout":5}}',
      '{"type":"error","stream":"text","code":"unknown_tool","message":"unknown tool <tf-nope>","id":"3"}',
      `{"type":"error","stream":"text","code":"unclosed_tag","message":"<tf-read id=\\"5\\"> was still open when the stream ended","id":"5"}`,
      '{"type":"visible_text","text":"Hi  `<tf-mkdir id=\\"4\\" path=\\"q\\"/>` bye "}',
    ]);
    for (const n of ['1', '2', '3', '7', '64']) expect(run(file, '--chunk', n).stdout, `--chunk ${n}`).toBe(r.stdout);
  });

  it('reads .jsonl deltas of both streams; across streams the later completion is the duplicate', () => {
    const file = join(dir, 'turn.jsonl');
    writeFileSync(file, [
      { stream: 'reasoning', delta: '<tf-write id="1" path="r.txt">long ' },
      { stream: 'text', delta: 'Answer <tf-mkdir id="1" path="t"/> done' },
      { stream: 'reasoning', delta: 'body</tf-write>' },
    ].map((d) => JSON.stringify(d)).join('\n') + '\n');
    const out = lines(run(file).stdout);
    expect(out.map((o) => [o.type, o.stream, o.code ?? o.command?.id])).toEqual([
      ['command', 'text', '1'], ['error', 'reasoning', 'duplicate_id'], ['visible_text', undefined, undefined],
    ]);
    expect(out.at(-1).text).toBe('Answer  done');
    expect(run(file, '--chunk', '1').stdout).toBe(run(file).stdout);
  });

  it('legacy bare tags only with --legacy-tags', () => {
    const file = join(dir, 'legacy.txt');
    writeFileSync(file, '<write id="1" path="a">x</write>');
    expect(lines(run(file).stdout)).toEqual([{ type: 'visible_text', text: '<write id="1" path="a">x</write>' }]);
    expect(lines(run(file, '--legacy-tags').stdout)[0]).toMatchObject({ type: 'command', command: { tool: 'write', content: 'x' } });
  });

  it('exit 2 for unreadable input or bad arguments, 0 with parse errors', () => {
    expect(run(join(dir, 'missing.txt')).status).toBe(2);
    expect(run().status).toBe(2);
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"stream":"sideways","delta":"x"}\n');
    const r = run(bad);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('bad.jsonl:1');
    const ok = join(dir, 'err.txt');
    writeFileSync(ok, '<tf-mkdir/>');
    expect(run(ok, '--chunk', '0').status).toBe(2);
    expect(run(ok).status).toBe(0);
    expect(execFileSync(process.execPath, ['bin/thinkflow.mjs', 'parse', '-'], { input: '<tf-touch id="1" path="s"/>', encoding: 'utf8' })).toContain('"tool":"touch"');
  });
});
