// The built-in replay model: an OpenAI-compatible chat-completions server that
// streams scripted transcripts (reasoning and text deltas, native tool calls,
// usage). Used when OPENAI_BASE_URL is unset, by the demo, tests and benches.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens } from 'gpt-tokenizer';
import { computeChatCompletionTokenCount, type ChatMessage as CountedMessage } from 'gpt-tokenizer/functionCalling';
import { selectTranscript, Transcript, turnFor, type ChatRequestView, type ScriptedTurn, type TranscriptInput } from './transcript.ts';
import { log as serviceLog } from '../log/index.ts';

export const REPLAY_MODEL_NAME = 'thinkflow-replay';

export interface ReplayModelOptions {
  transcripts: readonly TranscriptInput[];
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (an ephemeral port) */
  port?: number;
}

export interface ReplayModel {
  /** Base URL including `/v1`, as the openai SDK expects. */
  readonly baseUrl: string;
  /** Requests served so far (tests and benches count model calls with it). */
  readonly requests: number;
  /**
   * The messages and offered tool names of every request, oldest first (tests
   * read the feedback from here), and the usage this provider bills for it —
   * whether or not it was sent: the prompt as received, the completion as far
   * as it was streamed before the client hung up.
   */
  readonly log: ReadonlyArray<LogEntry>;
  close(): Promise<void>;
}

export type ChatMessage = { role?: string; content?: unknown; tool_calls?: Array<{ function?: { name?: string; arguments?: string } }>; tool_call_id?: string };
type ChatBody = { messages?: ChatMessage[]; tools?: Array<{ function?: { name?: string } }>; stream?: boolean; stream_options?: { include_usage?: boolean } };
type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };
/**
 * `received_ms` / `ended_ms` (performance.now() of this process): when the request arrived and when its
 * response ended; benches subtract the model's own time from a job's wall time with them.
 */
export type LogEntry = { messages: ChatMessage[]; tools: string[]; usage?: Usage; received_ms: number; ended_ms?: number };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

function viewOf(body: ChatBody): ChatRequestView {
  const messages = body.messages ?? [];
  const task = textOf(messages.find((m) => m.role === 'user')?.content);
  const assistantTurns = messages.filter((m) => m.role === 'assistant').length;
  const flow = (body.tools ?? []).some((t) => t.function?.name === 'write') ? 'react' : 'thinkflow';
  return { task, assistantTurns, flow };
}

/**
 * Tokens of a text, long runs without blanks in 256-character slices: the
 * byte-pair merge of one huge "word" is quadratic. (The provider side of the
 * API keeps its own counter; the service's estimate is agent/usage.ts.)
 */
function countTextTokens(text: string): number {
  if (!/\S{256}/.test(text)) return countTokens(text);
  return text.split(/(\S{256})/).reduce((n, part) => n + (part ? countTokens(part) : 0), 0);
}

/**
 * Prompt tokens the way OpenAI bills a chat request (gpt-tokenizer's
 * implementation of its accounting, o200k_base): role and message overheads,
 * function definitions rendered as the model sees them, each tool call.
 */
function promptTokens(body: ChatBody): number {
  const messages: CountedMessage[] = (body.messages ?? []).flatMap((m) => [
    { role: m.role ?? 'user', content: textOf(m.content) },
    ...(m.tool_calls ?? []).map((c) => ({ role: 'assistant', content: '', function_call: { name: c.function?.name ?? '', arguments: c.function?.arguments ?? '' } })),
  ]);
  const functions = (body.tools ?? []).map((t) => t.function).filter((f): f is { name: string } => typeof f?.name === 'string');
  return computeChatCompletionTokenCount({ messages, ...(functions.length ? { functions } : {}) }, countTextTokens);
}

function fallbackTurn(view: ChatRequestView): ScriptedTurn {
  return {
    reasoning: '',
    text: `The built-in replay model has no script for this task (${view.task.slice(0, 80)}). Point OPENAI_BASE_URL at a real model to run it.`,
    tool_calls: [],
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Streams one scripted turn; returns the usage billed for what was actually sent. */
async function streamTurn(res: ServerResponse, turn: ScriptedTurn, transcript: Transcript | undefined, body: ChatBody, requestNo: number): Promise<Usage> {
  const id = `chatcmpl-replay-${requestNo}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = transcript?.chunk ?? 24;
  const delay = transcript?.delay_ms ?? 0;
  let open = true;
  res.on('close', () => { open = false; });
  const send = (delta: Record<string, unknown>, finish: string | null = null) => {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: REPLAY_MODEL_NAME, system_fingerprint: 'thinkflow-replay', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  send({ role: 'assistant', content: '' });
  // Everything streamed, per stream, is what the completion bills.
  const sent: string[] = [];
  for (const [field, text] of [[transcript?.reasoning_field ?? 'reasoning_content', turn.reasoning], ['content', turn.text]] as const) {
    let streamed = '';
    for (let at = 0; at < text.length && open; at += chunk) {
      streamed += text.slice(at, at + chunk);
      send({ [field]: text.slice(at, at + chunk) });
      if (delay > 0) await sleep(delay);
    }
    sent.push(streamed);
  }
  // Tool-call arguments are paced like text, so the wall times of both flows compare.
  for (const [index, call] of turn.tool_calls.entries()) {
    if (!open) break;
    const args = JSON.stringify(call.arguments);
    send({ tool_calls: [{ index, id: call.id ?? `call_${requestNo}_${index}`, type: 'function', function: { name: call.name, arguments: '' } }] });
    sent.push(call.name);
    let streamed = '';
    for (let at = 0; at < args.length && open; at += chunk) {
      send({ tool_calls: [{ index, function: { arguments: args.slice(at, at + chunk) } }] });
      streamed += args.slice(at, at + chunk);
      if (delay > 0) await sleep(delay);
    }
    sent.push(streamed);
  }
  const prompt = promptTokens(body);
  const completion = sent.reduce((n, text) => n + countTextTokens(text), 0);
  const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (!open) return usage;
  send({}, turn.tool_calls.length > 0 ? 'tool_calls' : 'stop');
  if (body.stream_options?.include_usage && (transcript?.usage ?? true)) {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: REPLAY_MODEL_NAME, choices: [], usage })}\n\n`);
  }
  res.write('data: [DONE]\n\n');
  res.end();
  return usage;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts a replay model on 127.0.0.1.
 * @example const model = await startReplayModel({ transcripts: DEMO_TRANSCRIPTS }); // model.baseUrl
 */
export async function startReplayModel(options: ReplayModelOptions): Promise<ReplayModel> {
  const transcripts = options.transcripts.map((t) => Transcript.parse(t));
  let requests = 0;
  const log: LogEntry[] = [];
  const server: Server = createServer((req, res) => {
    const receivedMs = performance.now();
    void (async () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        return sendJson(res, 200, { object: 'list', data: [{ id: REPLAY_MODEL_NAME, object: 'model', owned_by: 'thinkflow' }] });
      }
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        return sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } });
      }
      let body: ChatBody;
      try {
        body = JSON.parse(await readBody(req)) as ChatBody;
      } catch {
        return sendJson(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      }
      if (!Array.isArray(body.messages)) return sendJson(res, 400, { error: { message: 'messages must be an array', type: 'invalid_request_error' } });
      const requestNo = ++requests;
      const entry: LogEntry = { messages: body.messages, tools: (body.tools ?? []).map((t) => t.function?.name ?? ''), received_ms: receivedMs };
      log.push(entry);
      const view = viewOf(body);
      const transcript = selectTranscript(transcripts, view);
      const turn = transcript ? turnFor(transcript, view.assistantTurns) : fallbackTurn(view);
      if (body.stream === false) {
        return sendJson(res, 400, { error: { message: 'the replay model only streams (stream: true)', type: 'invalid_request_error' } });
      }
      entry.usage = await streamTurn(res, turn, transcript, body, requestNo);
      entry.ended_ms = performance.now();
    })().catch((err: unknown) => {
      serviceLog().error({ err, component: 'replay-model', url: req.url }, 'replay model request failed');
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: 'server_error' } });
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    baseUrl: `http://${address.address}:${address.port}/v1`,
    get requests() { return requests; },
    log,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
