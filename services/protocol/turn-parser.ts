// One model turn: a parser per stream (reasoning, text) sharing the turn's ids
// (PROTOCOL.md §4). Pure: feed deltas in, get commands and parse errors out.
import type { Command, ParseError } from './command.ts';
import { precedingText } from './preceding-text.ts';
import { StreamParser } from './stream-parser.ts';
import { DEFAULT_BODY_LIMIT } from './tag.ts';
import { Utf8StreamDecoder } from './utf8.ts';

export type StreamName = 'reasoning' | 'text';
export const STREAM_NAMES: readonly StreamName[] = ['reasoning', 'text'];

export type ParserOutput =
  | { type: 'command'; stream: StreamName; command: Command }
  | { type: 'error'; stream: StreamName; error: ParseError };

export interface ParserOptions {
  /** Recognise bare legacy names (`<write …>`). @default false */
  legacyTags?: boolean;
  /** Largest body in UTF-8 bytes before `too_large`. @default 8 MiB */
  maxBodyBytes?: number;
  /**
   * Ids that count as used before the turn starts: those of commands that
   * failed or were skipped earlier, which the model may not reuse (§5.3).
   * @default none
   */
  usedIds?: Iterable<string>;
  /**
   * Keep what the model said before each command (its reasoning and visible
   * text, cut to 2 KiB), for `precedingText(id)`; the reasoning's visible text
   * is then kept too. @default false
   */
  keepPreceding?: boolean;
}

const NOTHING: readonly ParserOutput[] = Object.freeze([]);

// Plain `private` fields on the per-delta path: cheaper than `#fields` when
// deltas are a single byte.
export class TurnParser {
  readonly #ids = new Set<string>();
  private readonly parsers: Record<StreamName, StreamParser>;
  private readonly decoders: Partial<Record<StreamName, Utf8StreamDecoder>> = {};
  private out: ParserOutput[] = [];
  private ended = false;
  /** command id → the words before it (keepPreceding only) */
  readonly #preceding: Map<string, string> | null;

  constructor(options: ParserOptions = {}) {
    for (const id of options.usedIds ?? []) this.#ids.add(id);
    const keep = options.keepPreceding ?? false;
    this.#preceding = keep ? new Map() : null;
    const make = (stream: StreamName) =>
      new StreamParser(
        { legacyTags: options.legacyTags ?? false, bodyLimit: options.maxBodyBytes ?? DEFAULT_BODY_LIMIT, trackVisible: stream === 'text' || keep },
        {
          claimId: (id) => {
            if (this.#ids.has(id)) return false;
            this.#ids.add(id);
            return true;
          },
          command: (command) => {
            // Called as the closing tag completes: the visible text is exactly what came before the tag.
            this.#preceding?.set(command.id, precedingText(this.parsers.reasoning.visibleText, this.parsers.text.visibleText));
            this.out.push({ type: 'command', stream, command });
          },
          error: (error) => this.out.push({ type: 'error', stream, error }),
        },
      );
    this.parsers = { reasoning: make('reasoning'), text: make('text') };
  }

  /** Feeds one delta; returns the commands and errors it completed, in order. */
  feed(stream: StreamName, delta: string | Uint8Array): readonly ParserOutput[] {
    if (this.ended) throw new Error('TurnParser.feed called after end()');
    const text = typeof delta === 'string' ? delta : (this.decoders[stream] ??= new Utf8StreamDecoder()).decode(delta);
    if (text.length > 0) this.parsers[stream].feed(text);
    return this.drain();
  }

  /** Both streams ended: reports tags left open (reasoning first, then text). */
  end(): readonly ParserOutput[] {
    if (this.ended) return NOTHING;
    this.ended = true;
    for (const stream of STREAM_NAMES) {
      const rest = this.decoders[stream]?.end();
      if (rest) this.parsers[stream].feed(rest);
      this.parsers[stream].end();
    }
    return this.drain();
  }

  /** The text stream with protocol blocks removed, so far. */
  visibleText(): string {
    return this.parsers.text.visibleText;
  }

  /** What the model said before command `id` (its reasoning, then its visible text; at most 2 KiB), with keepPreceding. */
  precedingText(id: string): string | undefined {
    return this.#preceding?.get(id);
  }

  /** Visible text produced since the last call (for streaming it to users). */
  takeVisible(): string {
    return this.parsers.text.takeVisible();
  }

  private drain(): readonly ParserOutput[] {
    if (this.out.length === 0) return NOTHING;
    const out = this.out;
    this.out = [];
    return out;
  }
}

/** Parses a whole text-stream document as one turn. */
export function parseAll(text: string, options: ParserOptions = {}): { outputs: ParserOutput[]; visibleText: string } {
  const parser = new TurnParser(options);
  const outputs = [...parser.feed('text', text), ...parser.end()];
  return { outputs, visibleText: parser.visibleText() };
}
