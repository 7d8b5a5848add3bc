// The state machine for one delta stream (reasoning or text): plain text with
// its inert regions (fences, inline code spans), protocol tags and raw bodies.
// Every character is looked at a bounded number of times, whatever the
// chunking (PROTOCOL.md §4).
import type { Command, ParseError } from './command.ts';
import { BodyReader, bodyKind } from './body-reader.ts';
import { FenceReader } from './fence.ts';
import { OpeningTagReader, isBlank, isLower } from './opening-tag.ts';
import { completeTag, unclosedOpeningTag, type CompletionContext } from './tag.ts';
import { isToolName } from './tools.ts';
import { TextAccumulator } from './text-accumulator.ts';
import { Stop, TextScanner } from './text-scanner.ts';

export interface StreamSink {
  claimId(id: string): boolean;
  command(command: Command): void;
  error(error: ParseError): void;
}

export interface StreamParserOptions {
  legacyTags: boolean;
  bodyLimit: number;
  trackVisible: boolean;
}

const enum S { Text, Candidate, TfNameStart, OpeningTag, Body, Fence }
const GT = 0x3e, SLASH = 0x2f, DASH = 0x2d;

// Plain `private` fields instead of `#fields`: feed() runs once per delta and
// 1-byte deltas make every property access count.
export class StreamParser {
  private state = S.Text;
  private readonly opts: StreamParserOptions;
  private readonly sink: StreamSink;
  private readonly text = new TextScanner();
  // A `<` that may become a tag, and the letters after it.
  private pending = '';
  private candidate = '';
  // The tag or fence being read.
  private opening: OpeningTagReader | null = null;
  /** The open tag is a bare legacy name (`<write>`), closed by `</write>`. */
  private legacy = false;
  private body: BodyReader | null = null;
  private fence: FenceReader | null = null;
  private visible = new TextAccumulator();
  /**
   * Visible text not yet handed out by takeVisible, kept apart because
   * re-slicing the whole text per delta would be quadratic. Only kept once
   * someone takes visible text (the job runner does; `thinkflow parse` never).
   */
  private fresh = '';
  private handingOut = false;
  private visStart = 0;

  private readonly completion: CompletionContext;

  constructor(opts: StreamParserOptions, sink: StreamSink) {
    this.opts = opts;
    this.sink = sink;
    this.completion = { bodyLimit: opts.bodyLimit, claimId: (id) => sink.claimId(id) };
  }

  get visibleText(): string {
    return this.visible.toString();
  }

  /** Visible text produced since the last call. */
  takeVisible(): string {
    if (!this.handingOut) {
      this.handingOut = true;
      return this.visible.toString();
    }
    const fresh = this.fresh;
    this.fresh = '';
    return fresh;
  }

  feed(s: string): void {
    const n = s.length;
    // Single-character deltas of plain text or body content are the common case
    // with 1-byte streaming; skip the general loop for them.
    if (n === 1 && this.state === S.Text) {
      const c = s.charCodeAt(0);
      if (this.text.isPlain(c)) {
        if (this.opts.trackVisible) {
          this.visible.appendCode(c);
          if (this.handingOut) this.fresh += s;
        }
        return;
      }
    } else if (n === 1 && this.state === S.Body && this.body!.appendPlainChar(s)) {
      return;
    }
    let i = 0;
    this.visStart = 0;
    while (i < n) {
      switch (this.state) {
        case S.Text: i = this.plainText(s, i); break;
        case S.Candidate: i = this.candidateChar(s, i); break;
        case S.TfNameStart: i = this.nameStart(s, i); break;
        case S.OpeningTag: i = this.openingTag(s, i); break;
        case S.Body: i = this.bodyText(s, i); break;
        case S.Fence: i = this.fenceText(s, i); break;
      }
    }
    if (this.opts.trackVisible && (this.state === S.Text || this.state === S.Fence) && this.visStart < n) {
      this.show(this.visStart === 0 ? s : s.slice(this.visStart));
    }
  }

  private show(text: string): void {
    this.visible.append(text);
    if (this.handingOut) this.fresh += text;
  }

  /** The stream ended: settle whatever is still open. */
  end(): void {
    switch (this.state) {
      case S.Candidate:
      case S.TfNameStart:
        if (this.opts.trackVisible) this.show(this.pending);
        break;
      case S.OpeningTag:
        // The opening tag never completed: only `unclosed_tag` (§7).
        this.sink.error(unclosedOpeningTag(this.opening!.name, this.fullName(this.opening!.name), this.opening!.id));
        break;
      case S.Body:
        this.body!.end();
        this.finishTag(0);
        break;
      default:
        break;
    }
    this.opening = null;
    this.body = null;
    this.fence = null;
    this.state = S.Text;
  }

  // ---- text, inline code spans and fences ----

  private plainText(s: string, i: number): number {
    const n = s.length;
    i = this.text.scan(s, i);
    if (this.text.stop === Stop.Fence) {
      this.fence = new FenceReader(this.text.fenceChar, this.text.fenceLength);
      this.state = S.Fence;
      return i;
    }
    if (this.text.stop !== Stop.Angle) return i;
    if (this.opts.trackVisible && i > this.visStart) this.show(s.slice(this.visStart, i));
    // The whole `<tf-x` is in this delta (the usual case): skip the candidate states.
    if (i + 4 < n && s.startsWith('<tf-', i) && isLower(s.charCodeAt(i + 4))) {
      this.opening = new OpeningTagReader('', 4, false);
      this.legacy = false;
      this.state = S.OpeningTag;
      return i + 4;
    }
    this.pending = '<';
    this.candidate = '';
    this.state = S.Candidate;
    return i + 1;
  }

  private fenceText(s: string, i: number): number {
    i = this.fence!.read(s, i);
    if (this.fence!.closed) {
      this.fence = null;
      this.state = S.Text;
      this.text.afterFence();
    }
    return i;
  }

  // ---- tags ----

  private notATag(i: number): number {
    if (this.opts.trackVisible) this.show(this.pending);
    this.pending = '';
    this.visStart = i;
    this.state = S.Text;
    return i;
  }

  private candidateChar(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isLower(c) && this.candidate.length < 7) {
      this.candidate += s[i];
      this.pending += s[i];
      return i + 1;
    }
    if (c === DASH && this.candidate === 'tf') {
      this.pending += '-';
      this.state = S.TfNameStart;
      return i + 1;
    }
    if (this.opts.legacyTags && isToolName(this.candidate) && (isBlank(c) || c === SLASH || c === GT)) {
      this.opening = new OpeningTagReader(this.candidate, this.pending.length, true);
      this.legacy = true;
      this.state = S.OpeningTag;
      return i;
    }
    return this.notATag(i);
  }

  private nameStart(s: string, i: number): number {
    if (!isLower(s.charCodeAt(i))) return this.notATag(i);
    this.opening = new OpeningTagReader('', 4, false);
    this.legacy = false;
    this.state = S.OpeningTag;
    return i;
  }

  private fullName(name: string): string {
    return this.legacy ? name : `tf-${name}`;
  }

  private openingTag(s: string, i: number): number {
    const tag = this.opening!;
    i = tag.read(s, i);
    if (!tag.done) return i;
    if (tag.selfClosing) return this.finishTag(i);
    this.body = new BodyReader(`</${this.fullName(tag.name)}>`, bodyKind(tag.name), this.opts.bodyLimit);
    this.state = S.Body;
    return i;
  }

  private bodyText(s: string, i: number): number {
    i = this.body!.read(s, i);
    return this.body!.closed ? this.finishTag(i) : i;
  }

  /** The tag is complete, or the stream ended inside its body. Returns where text resumes. */
  private finishTag(next: number): number {
    const tag = this.opening!;
    const body = this.body;
    const closed = body === null || body.closed;
    this.opening = null;
    this.body = null;
    this.state = S.Text;
    this.visStart = next;
    const outcome = completeTag(
      {
        name: tag.name,
        attrs: tag.attrs,
        syntaxError: tag.syntaxError,
        openingBytes: tag.bytes,
        selfClosing: tag.selfClosing,
        closed,
        bodyBytes: body?.bytes ?? 0,
        bodyHasText: body?.hasText ?? false,
        content: body?.text() ?? '',
        edit: closed && body?.edit ? body.edit.finish() : null,
      },
      this.completion,
    );
    if (outcome.ok) this.sink.command(outcome.command);
    else this.sink.error(outcome.error);
    return next;
  }
}


