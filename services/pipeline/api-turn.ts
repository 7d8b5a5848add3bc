import { z } from 'zod';
import type { Command, ParseError, ParserOutput } from '../protocol/index.ts';
import { ToolName, TurnParser } from '../protocol/index.ts';
import { withIds } from '../log/index.ts';
import { PipelineError } from './errors.ts';
import { LedgerStatus, type LedgerRecord } from './ledger-record.ts';
import { parseErrorLabel } from './lifecycle/results.ts';
import type { CommandHandle, Pipeline } from './pipeline.ts';
import type { FinishWatch } from './finish-watch.ts';

// One REST turn (`POST /v1/sessions/:id/commands`, flow `api`): parse the whole
// body, enqueue commands in completion order, treat a parse error as a failed
// command (later commands of the turn are skipped, not run), then wait until
// every command is final.

/** A command's outcome as `POST /v1/sessions/:id/commands` answers it: the ledger record's result fields that are set. */
export const CommandResult = z.object({
  id: z.string(), tool: ToolName, status: LedgerStatus,
  /** with every failure: a code of the spec (`empty_content`, `path_outside_workspace`, `forbidden`, `skipped`, …) */
  error: z.string().optional(), code: z.string().optional(), exit_code: z.number().int().optional(),
  stdout: z.string().optional(), stderr: z.string().optional(), bytes_written: z.number().int().optional(),
});
export type CommandResult = z.infer<typeof CommandResult>;

/** What one REST turn answers: its number, each command's result, the parse errors. */
export type ApiTurnResult = { turn: number; results: CommandResult[]; errors: ParseError[] };

export function toResult(r: LedgerRecord): CommandResult {
  const out: CommandResult = { id: r.id, tool: r.tool, status: r.status };
  if (r.error !== null) out.error = r.error;
  if (r.error_code !== null) out.code = r.error_code;
  if (r.exit_code !== null) out.exit_code = r.exit_code;
  if (r.stdout !== null) out.stdout = r.stdout;
  if (r.stderr !== null) out.stderr = r.stderr;
  if (r.bytes_written !== null) out.bytes_written = r.bytes_written;
  return out;
}

/** Parsed slice by slice, so a body of tens of thousands of tags stops at the cap, before anything is recorded. */
const PARSE_SLICE = 64 * 1024;

/** The body's commands and parse errors; `too_many_commands` as soon as it holds more than `max` commands. */
export function parseTurnBody(text: string, max: number, options: Pipeline['parserOptions'] = {}): ParserOutput[] {
  const parser = new TurnParser(options);
  const outputs: ParserOutput[] = [];
  let commands = 0;
  const take = (out: readonly ParserOutput[]) => {
    // A parse error counts as a (failed) command of the turn (API.md), so 20,000 broken tags are capped too.
    for (const o of out) {
      if (++commands > max) {
        throw new PipelineError('too_many_commands', `a turn may hold at most ${max} commands (THINKFLOW_MAX_COMMANDS_PER_TURN); nothing of this one was run`, { limit: max });
      }
      outputs.push(o);
    }
  };
  for (let at = 0; at < text.length;) {
    let end = Math.min(at + PARSE_SLICE, text.length);
    // Never between the two halves of a surrogate pair.
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
    take(parser.feed('text', text.slice(at, end)));
    at = end;
  }
  take(parser.end());
  return outputs;
}

export async function runCommandsTurn(p: Pipeline, sid: string, text: string, opts: { signal?: AbortSignal } = {}): Promise<ApiTurnResult> {
  return runParsedTurn(p, sid, turnItems(parseTurnBody(text, p.maxCommandsPerTurn, p.parserOptions)), opts.signal);
}

export type TurnItem = { command: Command; parsedAt?: Date } | { error: ParseError };

/** The parsed body as a turn's items; `parsedAt`: when the body was parsed (now, for a body parsed just before). */
export function turnItems(outputs: readonly ParserOutput[], parsedAt = new Date()): TurnItem[] {
  return outputs.map((o) => (o.type === 'command' ? { command: o.command, parsedAt } : { error: o.error }));
}

/** A turn's number and the watch that sees its commands finish (opened before the first enqueue; closed here). */
export type TurnOpening = { turn: number; watch: FinishWatch };

/** `opened`: the turn as the caller opened it (Pipeline.openTurn: REST, one round trip); else it is opened here. */
export async function runParsedTurn(p: Pipeline, sid: string, items: TurnItem[], signal?: AbortSignal, opened?: TurnOpening): Promise<ApiTurnResult> {
  const { turn, watch } = opened ?? (await openHere(p, sid));
  const handles: CommandHandle[] = [];
  const errors: ParseError[] = [];
  try {
    for (const item of items) {
      if ('error' in item) {
        errors.push(item.error);
        await p.failTurn(sid, turn, parseErrorLabel(item.error));
      } else {
        handles.push(await p.enqueue(sid, turn, item.command, 'api', item.parsedAt));
      }
    }
    const records = await p.awaitAll(sid, handles.map((h) => h.index), signal, watch);
    return { turn, results: records.map(toResult), errors };
  } finally {
    watch.close();
  }
}

/** The turn's number (its key's storage budget checked) and its watch, subscribed while the number is taken. */
async function openHere(p: Pipeline, sid: string): Promise<TurnOpening> {
  const meta = await p.session(sid); // a gone session is `session_not_found` before anything is written
  // Opened before the first enqueue, the watch sees every finish: the wait reads no status.
  const watching = p.watchFinished(sid);
  const turn = await p.nextTurn(sid, meta).catch(async (err: unknown) => {
    await watching.then((w) => w.close(), (e: unknown) => withIds({ session_id: sid }).warn({ err: e }, 'the finish watch of a refused turn failed too'));
    throw err;
  });
  return { turn, watch: await watching };
}
