// The model's side failing mid-stream over real HTTP, through the same
// OpenAI SDK client the service uses: a connection dropped after the first
// chunk, and a stream that goes silent. Either surfaces as an error after the
// events that did arrive, within a bound, never a hang (the job then gives
// the model one more call: test/unit/agent/job-runner.test.ts).
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelEndpoint, ModelStalledError, withIdleTimeout, type ModelEvent } from '../../services/agent/index.ts';

const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
let server: http.Server;
let base = '';
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk('<tf-write id="1" path="a.txt">\nhello\n</tf-write>'));
    // /drop: the connection dies mid-stream; /stall: it stays open and silent.
    if (req.url?.startsWith('/drop')) setTimeout(() => req.socket.destroy(), 50);
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

async function consume(path: string, idleMs: number): Promise<{ events: ModelEvent[]; error: unknown; ms: number }> {
  const endpoint = modelEndpoint(`${base}${path}/v1`, 'k', 'm', 'openai-compatible');
  const stream = withIdleTimeout(endpoint.stream, idleMs);
  const events: ModelEvent[] = [];
  const started = Date.now();
  try {
    for await (const e of stream({ messages: [{ role: 'user', kind: 'task', text: 'go' }], tools: [] }, new AbortController().signal)) events.push(e);
    return { events, error: null, ms: Date.now() - started };
  } catch (error) {
    return { events, error, ms: Date.now() - started };
  }
}

describe('a model stream that fails mid-way, over HTTP', () => {
  it('dropped after its first chunk: the chunk arrives, then an error, at once', async () => {
    const r = await consume('/drop', 30_000);
    expect(r.events).toEqual([{ type: 'text', text: '<tf-write id="1" path="a.txt">\nhello\n</tf-write>' }]);
    expect(r.error).toBeInstanceOf(Error);
    expect(r.ms).toBeLessThan(5_000);
  });

  it('silent after its first chunk: given up after the idle bound with ModelStalledError', async () => {
    const r = await consume('/stall', 400);
    expect(r.events).toHaveLength(1);
    expect(r.error).toBeInstanceOf(ModelStalledError);
    expect(r.ms).toBeGreaterThanOrEqual(390);
    expect(r.ms).toBeLessThan(5_000);
  });
});
