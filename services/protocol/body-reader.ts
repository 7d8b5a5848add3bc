// Reads a raw body up to the first `</NAME>` (PROTOCOL.md §1): drops one
// leading line break, counts UTF-8 bytes, keeps content only while it is under
// the limit, and feeds edit bodies to their own checker.
import { EditBodyReader } from './edit-body.ts';
import { isToolName, toolOf } from './tools.ts';
import { TextAccumulator } from './text-accumulator.ts';
import { utf8SliceBytes, utf8UnitBytes } from './utf8.ts';

const enum B { Start, Cr, Text, Done }
const NL = 0x0a, CR = 0x0d;
const NON_BLANK = /[^ \t\r\n\f]/;

/** What the body is for: kept content, an edit, a no-body tool (blank check), or nothing. */
export type BodyKind = 'content' | 'edit' | 'none' | 'ignore';

export function bodyKind(name: string): BodyKind {
  return isToolName(name) ? toolOf(name).body : 'ignore';
}

// Plain `private` fields: this runs per character with 1-byte deltas.
export class BodyReader {
  bytes = 0;
  hasText = false;
  readonly edit: EditBodyReader | null;
  private state = B.Start;
  private matched = 0;
  private readonly content: TextAccumulator | null;
  private readonly closing: string;
  private readonly kind: BodyKind;
  private readonly limit: number;

  constructor(closing: string, kind: BodyKind, limit: number) {
    this.closing = closing;
    this.kind = kind;
    this.limit = limit;
    this.content = kind === 'content' ? new TextAccumulator() : null;
    this.edit = kind === 'edit' ? new EditBodyReader() : null;
  }

  get closed(): boolean {
    return this.state === B.Done;
  }

  /** The kept content ('' once the body went over the limit). */
  text(): string {
    return this.content && this.bytes <= this.limit ? this.content.toString() : '';
  }

  read(s: string, i: number): number {
    const n = s.length;
    while (i < n) {
      switch (this.state) {
        case B.Start: {
          const c = s.charCodeAt(i);
          this.state = c === CR ? B.Cr : B.Text;
          if (c === NL || c === CR) i++;
          break;
        }
        case B.Cr:
          this.state = B.Text;
          if (s.charCodeAt(i) === NL) i++;
          else this.piece('\r');
          break;
        case B.Text:
          i = this.scan(s, i);
          break;
        case B.Done:
          return i;
      }
    }
    return i;
  }

  /** Fast path for a one-character delta in the middle of body text; false when it needs the full reader. */
  appendPlainChar(ch: string): boolean {
    if (this.state !== B.Text || this.matched !== 0 || ch === '<') return false;
    this.piece(ch);
    return true;
  }

  /** The stream ended inside the body: what was held back is content after all. */
  end(): void {
    if (this.state === B.Cr) this.piece('\r');
    if (this.matched > 0) this.piece(this.closing.slice(0, this.matched));
    this.matched = 0;
  }

  private scan(s: string, i: number): number {
    const n = s.length;
    const closing = this.closing;
    if (this.matched > 0) {
      // Finish a closing tag that started in an earlier delta, one char at a time.
      while (i < n && this.matched > 0) {
        if (s.charCodeAt(i) !== closing.charCodeAt(this.matched)) {
          // What looked like the closing tag was content; this char is looked at again.
          this.piece(closing.slice(0, this.matched));
          this.matched = 0;
          break;
        }
        i++;
        if (++this.matched === closing.length) {
          this.state = B.Done;
          return i;
        }
      }
      if (this.matched > 0) return n;
    }
    // Content runs up to the first '<' that starts the closing tag; other '<'
    // stay in the same piece, so a body full of markup is still a few slices.
    const start = i;
    let lt = s.indexOf('<', i);
    while (lt >= 0) {
      const room = n - lt;
      if (room >= closing.length) {
        if (s.startsWith(closing, lt)) {
          if (lt > start) this.piece(s.slice(start, lt));
          this.state = B.Done;
          return lt + closing.length;
        }
      } else if (closing.startsWith(s.slice(lt))) {
        // The chunk ends inside what may be the closing tag: hold it back.
        if (lt > start) this.piece(s.slice(start, lt));
        this.matched = room;
        return n;
      }
      lt = s.indexOf('<', lt + 1);
    }
    this.piece(start === 0 ? s : s.slice(start));
    return n;
  }

  private piece(piece: string): void {
    this.bytes += piece.length === 1 ? utf8UnitBytes(piece.charCodeAt(0)) : utf8SliceBytes(piece, 0, piece.length);
    switch (this.kind) {
      case 'content':
        if (this.bytes <= this.limit) this.content!.append(piece);
        break;
      case 'edit':
        this.edit!.keepText = this.bytes <= this.limit;
        this.edit!.push(piece);
        break;
      case 'none':
        if (!this.hasText && NON_BLANK.test(piece)) this.hasText = true;
        break;
      case 'ignore':
        break;
    }
  }
}
