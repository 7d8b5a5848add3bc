// `thinkflow parse FILE [--chunk N] [--legacy-tags]`: the streaming parser run
// offline, printing the JSON lines of API.md (CLI).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { TurnParser, type Command, type ParserOutput, type StreamName } from '../../protocol/index.ts';

interface Delta {
  stream: StreamName;
  bytes: Uint8Array;
}

/** The command fields of API.md, in their documented order. */
function commandJson(c: Command): Record<string, unknown> {
  const out: Record<string, unknown> = { id: c.id, tool: c.tool };
  for (const key of ['path', 'dest', 'cmd', 'content', 'old_text', 'new_text'] as const) {
    if (c[key] !== undefined) out[key] = c[key];
  }
  out.need_result = c.need_result;
  if (c.timeout !== undefined) out.timeout = c.timeout;
  return out;
}

function outputJson(o: ParserOutput): Record<string, unknown> {
  if (o.type === 'command') return { type: 'command', stream: o.stream, command: commandJson(o.command) };
  const line: Record<string, unknown> = { type: 'error', stream: o.stream, code: o.error.code, message: o.error.message };
  if (o.error.id !== undefined) line.id = o.error.id;
  return line;
}

function readDeltas(name: string, data: Buffer): Delta[] {
  if (!name.endsWith('.jsonl')) return [{ stream: 'text', bytes: data }];
  const deltas: Delta[] = [];
  // A byte-order mark would make the first line invalid JSON.
  const lines = data.toString('utf8').replace(/^\uFEFF/, '').split('\n');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (err) {
      throw new Error(`${name}:${index + 1}: not JSON (${(err as Error).message})`);
    }
    const { stream, delta } = (record ?? {}) as { stream?: unknown; delta?: unknown };
    if (stream !== 'reasoning' && stream !== 'text') {
      throw new Error(`${name}:${index + 1}: "stream" must be "reasoning" or "text"`);
    }
    if (typeof delta !== 'string') throw new Error(`${name}:${index + 1}: "delta" must be a string`);
    deltas.push({ stream, bytes: Buffer.from(delta, 'utf8') });
  });
  return deltas;
}

async function readInput(file: string): Promise<Buffer> {
  if (file !== '-') return readFile(file);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function parseMain(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { chunk: { type: 'string' }, 'legacy-tags': { type: 'boolean', default: false } },
    });
  } catch (err) {
    process.stderr.write(`thinkflow parse: ${(err as Error).message}\n`);
    return 2;
  }
  const [file, ...extra] = parsed.positionals;
  if (!file || extra.length > 0) {
    process.stderr.write('usage: thinkflow parse FILE [--chunk N] [--legacy-tags]   (FILE: text, .jsonl deltas, or - for stdin)\n');
    return 2;
  }
  let chunk = 0;
  if (parsed.values.chunk !== undefined) {
    chunk = Number(parsed.values.chunk);
    if (!Number.isInteger(chunk) || chunk < 1) {
      process.stderr.write(`thinkflow parse: --chunk must be a whole number of bytes >= 1, got '${parsed.values.chunk}'\n`);
      return 2;
    }
  }
  let deltas: Delta[];
  try {
    deltas = readDeltas(file, await readInput(file));
  } catch (err) {
    process.stderr.write(`thinkflow parse: ${(err as Error).message}\n`);
    return 2;
  }

  const parser = new TurnParser({ legacyTags: parsed.values['legacy-tags'] });
  const lines: string[] = [];
  const emit = (outputs: readonly ParserOutput[]) => {
    for (const o of outputs) lines.push(JSON.stringify(outputJson(o)));
  };
  for (const { stream, bytes } of deltas) {
    if (chunk === 0) {
      emit(parser.feed(stream, bytes));
      continue;
    }
    for (let at = 0; at < bytes.length; at += chunk) emit(parser.feed(stream, bytes.subarray(at, at + chunk)));
  }
  emit(parser.end());
  lines.push(JSON.stringify({ type: 'visible_text', text: parser.visibleText() }));
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}
