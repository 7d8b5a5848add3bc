// The replay model: transcript choice, turn choice, and an OpenAI-compatible
// stream read back through the openai SDK itself.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_TRANSCRIPTS, DEMO_TASK, reactTranscript, thinkflowTranscript, WEB_SKELETON } from '../../../services/replay-model/scenarios.ts';
import { startReplayModel, type ReplayModel } from '../../../services/replay-model/server.ts';
import { selectTranscript, Transcript, turnFor } from '../../../services/replay-model/transcript.ts';
import { parseAll } from '../../../services/protocol/index.ts';

describe('transcripts', () => {
  const all = BUILTIN_TRANSCRIPTS.map((t) => Transcript.parse(t));
  it('are chosen by task text and flow', () => {
    expect(selectTranscript(all, { task: DEMO_TASK, assistantTurns: 0, flow: 'thinkflow' })?.name).toBe('web-skeleton/thinkflow');
    expect(selectTranscript(all, { task: DEMO_TASK.toUpperCase(), assistantTurns: 0, flow: 'react' })?.name).toBe('web-skeleton/react');
    expect(selectTranscript(all, { task: 'something else', assistantTurns: 0, flow: 'react' })).toBeUndefined();
  });

  it('serve the turn after the assistant messages so far, the last one past the end', () => {
    const t = Transcript.parse(reactTranscript(WEB_SKELETON));
    // Parallel tool calls: the whole plan in the first call.
    expect(turnFor(t, 0).tool_calls.map((c) => c.name)).toEqual(WEB_SKELETON.actions.map((a) => a.tool));
    expect(turnFor(t, 99).tool_calls).toEqual([]);
  });

  it('the thinkflow scenario and its react twin do the same work', () => {
    const tf = Transcript.parse(thinkflowTranscript(WEB_SKELETON));
    const commands = parseAll(tf.turns[0]!.reasoning).outputs;
    expect(commands.every((o) => o.type === 'command')).toBe(true);
    const react = Transcript.parse(reactTranscript(WEB_SKELETON));
    expect(react.turns.flatMap((t) => t.tool_calls.map((c) => c.arguments.path))).toEqual(commands.map((o) => (o.type === 'command' ? o.command.path : '')));
  });
});

describe('replay server', () => {
  let model: ReplayModel;
  beforeAll(async () => {
    model = await startReplayModel({
      transcripts: [{ name: 't', match: 'hello', chunk: 3, delay_ms: 0, turns: [{ reasoning: 'think <tf-mkdir id="1" path="a"/>', text: 'answer', tool_calls: [{ name: 'read', arguments: { path: 'a' } }] }] }],
    });
  });
  afterAll(async () => { await model.close(); });

  it('streams reasoning, text, tool calls and usage that the openai SDK reads', async () => {
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'x' });
    const stream = await client.chat.completions.create({ model: 'any', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello there' }] });
    let reasoning = '';
    let text = '';
    let args = '';
    let usage: { total_tokens: number } | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta as { reasoning_content?: string; content?: string; tool_calls?: Array<{ function?: { arguments?: string } }> } | undefined;
      reasoning += d?.reasoning_content ?? '';
      text += d?.content ?? '';
      for (const c of d?.tool_calls ?? []) args += c.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(reasoning).toBe('think <tf-mkdir id="1" path="a"/>');
    expect(text).toBe('answer');
    expect(JSON.parse(args)).toEqual({ path: 'a' });
    expect(finish).toBe('tool_calls');
    expect(usage!.total_tokens).toBeGreaterThan(0);
    expect(model.log.at(-1)!.messages[0]).toMatchObject({ role: 'user', content: 'hello there' });
  });

  it('answers an unknown task with a turn that says so, and a bad body with 400', async () => {
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'x' });
    const stream = await client.chat.completions.create({ model: 'any', stream: true, messages: [{ role: 'user', content: 'no script' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toContain('no script for this task');
    const bad = await fetch(`${model.baseUrl}/chat/completions`, { method: 'POST', body: '{"messages": 3}' });
    expect(bad.status).toBe(400);
  });
});
