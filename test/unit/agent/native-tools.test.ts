import { describe, expect, it } from 'vitest';
import { FLOWS } from '../../../services/agent/flows.ts';
import { toLlmMessages, toLlmTools } from '../../../services/agent/model-client.ts';
import { commandFromToolCall, nativeTools } from '../../../services/agent/native-tools.ts';

const all = FLOWS.react.nativeTools;

describe('native tool calls → commands', () => {
  it.each([
    ['write', { path: 'a', content: 'x' }, { tool: 'write', path: 'a', content: 'x', allow_empty: true }],
    ['append', { path: 'a', content: 'x' }, { tool: 'append', path: 'a', content: 'x' }],
    ['mkdir', { path: 'd' }, { tool: 'mkdir', path: 'd' }],
    ['touch', { path: 't' }, { tool: 'touch', path: 't' }],
    ['copy', { path: 'a', dest: 'b' }, { tool: 'copy', path: 'a', dest: 'b' }],
    ['edit', { path: 'a', old_text: 'o', new_text: 'n' }, { tool: 'edit', path: 'a', old_text: 'o', new_text: 'n' }],
    ['read', { path: 'r' }, { tool: 'read', path: 'r' }],
    ['bash', { cmd: 'ls', timeout: 5 }, { tool: 'bash', cmd: 'ls', timeout: 5 }],
    ['list_files', {}, { tool: 'bash', cmd: "find . -not -path '*/.git/*' | sort | head -n 1000" }],
    ['grep', { pattern: "it's", path: 'src' }, { tool: 'bash', cmd: `grep -rnE -e "it's" -- ./src | head -n 500` }],
    // Argument injection (issue 9): an operand can never become an option or a find expression.
    ['list_files', { path: '-delete' }, { tool: 'bash', cmd: "find ./-delete -not -path '*/.git/*' | sort | head -n 1000" }],
    ['list_files', { path: '-exec rm {} ;' }, { tool: 'bash', cmd: "find './-exec rm {} ;' -not -path '*/.git/*' | sort | head -n 1000" }],
    ['grep', { pattern: 'x', path: '--include=*' }, { tool: 'bash', cmd: 'grep -rnE -e x -- ./--include\\=\\* | head -n 500' }],
  ])('%s', (name, args, expected) => {
    const out = commandFromToolCall('call_1', name, JSON.stringify(args), all);
    expect(out).toEqual({ ok: true, command: { id: 'call_1', need_result: true, ...expected } });
  });

  it.each([
    ['write', '{"path":"a"}', /needs a string 'content'/],
    ['copy', '{"path":"a"}', /needs a string 'dest'/],
    ['bash', '{"cmd":"ls","timeout":0}', /whole seconds/],
    ['bash', 'not json', /not a JSON object/],
    ['bash', '[1]', /not a JSON object/],
    ['format_disk', '{}', /not offered/],
    ['list_files', '{"path":"../.."}', /path_outside_workspace/],
    ['grep', '{"pattern":"x","path":"/etc"}', /path_outside_workspace/],
  ])('%s %s is refused with a reason', (name, raw, reason) => {
    const out = commandFromToolCall('c', name, raw, all);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.error).toMatch(reason);
  });

  it('thinkflow offers only information tools natively', () => {
    expect(nativeTools(FLOWS.thinkflow.nativeTools).map((t) => t.name)).toEqual(['read', 'bash', 'list_files', 'grep']);
    expect(commandFromToolCall('c', 'write', '{"path":"a","content":"x"}', FLOWS.thinkflow.nativeTools).ok).toBe(false);
  });
});

describe('messages at the provider boundary', () => {
  it('keeps visible text only and carries tool calls and results', () => {
    expect(toLlmMessages([
      { role: 'system', text: 's' },
      { role: 'user', kind: 'task', text: 't' },
      { role: 'assistant', visibleText: 'v', toolCalls: [], interrupted: true },
      { role: 'assistant', visibleText: '', toolCalls: [{ id: 'c1', name: 'read', arguments: '{"path":"a"}' }], interrupted: false },
      { role: 'tool', toolCallId: 'c1', text: 'content' },
    ])).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: 't' },
      { role: 'assistant', content: 'v' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'content' },
    ]);
  });

  it('offers native tools as OpenAI functions', () => {
    expect(toLlmTools(nativeTools(['read']))).toEqual([{
      type: 'function',
      function: {
        name: 'read', description: 'Read a file.',
        parameters: { type: 'object', properties: { path: { type: 'string', description: 'path relative to the workspace' } }, required: ['path'], additionalProperties: false },
      },
    }]);
  });
});
