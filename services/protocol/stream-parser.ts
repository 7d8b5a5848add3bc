// The state machine for one delta stream (reasoning or text): inert text
// (fences, inline code spans), protocol tags, raw bodies. Every character is
// looked at a bounded number of times, whatever the chunking (PROTOCOL.md §4).
import type { ParseError, Command } from './command.ts';
import { EditBodyReader } from './edit-body.ts';
import { completeTag, decodeAttributeValue, isToolName, takesBody, type TagRecord } from './tag.ts';
import { utf8SliceBytes, utf8UnitBytes } from './utf8.ts';

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

const enum S {
  Text, Candidate, TfNameStart, TfName,
  Attrs, AttrName, AfterAttrName, BeforeValue, Value, Unquoted, Slash,
  BodyStart, BodyCr, Body,
  FenceInfo, FenceLineStart, FenceRun, FenceTrail, FenceRest,
}

const NL = 0x0a, CR = 0x0d, TAB = 0x09, SPACE = 0x20, LT = 0x3c, GT = 0x3e, SLASH = 0x2f;
const EQ = 0x3d, DQ = 0x22, SQ = 0x27, DASH = 0x2d, BACKTICK = 0x60, TILDE = 0x7e;

const isBlank = (c: number) => c === SPACE || c === NL || c === TAB || c === CR || c === 0x0c;
const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isLetter = (c: number) => isLower(c) || (c >= 0x41 && c <= 0x5a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isNameChar = (c: number) => isLetter(c) || isDigit(c) || c === 0x5f || c === DASH;
const isAttrNameChar = (c: number) => isNameChar(c) || c === 0x3a || c === 0x2e;
const NON_BLANK = /[^ \t\r\n\f]/;

export class StreamParser {
  #state = S.Text;
  readonly #opts: StreamParserOptions;
  readonly #sink: StreamSink;
  // Text: line start (for fences), a run of backticks or tildes, an open inline span.
  #lineStart = true;
  #leadSpaces = 0;
  #runChar = 0;
  #runLen = 0;
  #runAtLineStart = false;
  #spanLen = 0;
  // Fences.
  #fenceChar = 0;
  #fenceLen = 0;
  #fenceCount = 0;
  #fenceSpaces = 0;
  // A `<` that may become a tag.
  #pending = '';
  #candidate = '';
  // The tag being read.
  #tag: TagRecord | null = null;
  #tagName = '';
  #closing = '';
  #closeMatched = 0;
  #attrName = '';
  #attrValue = '';
  #quote = '';
  #edit: EditBodyReader | null = null;
  // Visible text (text stream only).
  #visible = '';
  #visibleTaken = 0;
  #visStart = 0;

  constructor(opts: StreamParserOptions, sink: StreamSink) {
    this.#opts = opts;
    this.#sink = sink;
  }

  get visibleText(): string {
    return this.#visible;
  }

  /** Visible text produced since the last call. */
  takeVisible(): string {
    const fresh = this.#visible.slice(this.#visibleTaken);
    this.#visibleTaken = this.#visible.length;
    return fresh;
  }

  feed(s: string): void {
    const n = s.length;
    let i = 0;
    this.#visStart = 0;
    while (i < n) {
      switch (this.#state) {
        case S.Text: i = this.#text(s, i); break;
        case S.Candidate: i = this.#candidateChar(s, i); break;
        case S.TfNameStart: i = this.#nameStart(s, i); break;
        case S.TfName: i = this.#name(s, i); break;
        case S.Attrs: i = this.#attrs(s, i); break;
        case S.AttrName: i = this.#attrNameChars(s, i); break;
        case S.AfterAttrName: i = this.#afterAttrName(s, i); break;
        case S.BeforeValue: i = this.#beforeValue(s, i); break;
        case S.Value: i = this.#value(s, i); break;
        case S.Unquoted: i = this.#unquoted(s, i); break;
        case S.Slash: i = this.#slash(s, i); break;
        case S.BodyStart: i = this.#bodyStart(s, i); break;
        case S.BodyCr: i = this.#bodyCr(s, i); break;
        case S.Body: i = this.#body(s, i); break;
        case S.FenceInfo:
        case S.FenceRest: i = this.#fenceRest(s, i); break;
        case S.FenceLineStart: i = this.#fenceLineStart(s, i); break;
        case S.FenceRun: i = this.#fenceRun(s, i); break;
        case S.FenceTrail: i = this.#fenceTrail(s, i); break;
      }
    }
    if (this.#opts.trackVisible && this.#isVisibleState() && this.#visStart < n) {
      this.#visible += this.#visStart === 0 ? s : s.slice(this.#visStart);
    }
  }

  /** The stream ended: settle whatever is still open. */
  end(): void {
    switch (this.#state) {
      case S.Text:
        if (this.#runChar !== 0) this.#resolveRun();
        break;
      case S.Candidate:
      case S.TfNameStart:
        if (this.#opts.trackVisible) this.#visible += this.#pending;
        break;
      case S.TfName: case S.Attrs: case S.AttrName: case S.AfterAttrName:
      case S.BeforeValue: case S.Value: case S.Unquoted: case S.Slash: {
        // The opening tag never completed: only `unclosed_tag` (§7).
        const tag = this.#tag!;
        const id = tag.attrs.find(([k]) => k === 'id')?.[1];
        const error: ParseError = { code: 'unclosed_tag', message: `<${this.#tagName}> opening tag was still open when the stream ended` };
        if (id !== undefined && /^[0-9]+$/.test(id)) error.id = id;
        error.tool = tag.name;
        this.#sink.error(error);
        this.#tag = null;
        break;
      }
      case S.BodyStart: case S.BodyCr: case S.Body:
        if (this.#state === S.BodyCr) this.#bodyPiece('\r');
        if (this.#closeMatched > 0) this.#bodyPiece(this.#closing.slice(0, this.#closeMatched));
        this.#finishTag();
        break;
      default:
        break;
    }
    this.#state = S.Text;
  }

  #isVisibleState(): boolean {
    const st = this.#state;
    return st === S.Text || st >= S.FenceInfo;
  }

  // ---- text and inert regions ----

  #text(s: string, i: number): number {
    const n = s.length;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (this.#runChar !== 0) {
        if (c === this.#runChar) { this.#runLen++; continue; }
        if (this.#resolveRun()) return i;
      }
      if (this.#lineStart) {
        if (c === SPACE) {
          if (++this.#leadSpaces > 3) this.#lineStart = false;
          continue;
        }
        this.#lineStart = false;
        if (c === BACKTICK || c === TILDE) {
          this.#runChar = c;
          this.#runLen = 1;
          this.#runAtLineStart = true;
          continue;
        }
      }
      if (c === NL) {
        this.#spanLen = 0;
        this.#lineStart = true;
        this.#leadSpaces = 0;
      } else if (c === BACKTICK) {
        this.#runChar = c;
        this.#runLen = 1;
        this.#runAtLineStart = false;
      } else if (c === LT && this.#spanLen === 0) {
        if (this.#opts.trackVisible && i > this.#visStart) this.#visible += s.slice(this.#visStart, i);
        this.#pending = '<';
        this.#candidate = '';
        this.#state = S.Candidate;
        return i + 1;
      }
    }
    return n;
  }

  /** A run of backticks or tildes ended; returns true when it opened a fence. */
  #resolveRun(): boolean {
    const ch = this.#runChar;
    const len = this.#runLen;
    this.#runChar = 0;
    if (this.#runAtLineStart && len >= 3) {
      this.#fenceChar = ch;
      this.#fenceLen = len;
      this.#state = S.FenceInfo;
      return true;
    }
    if (ch === BACKTICK) {
      if (this.#spanLen === 0) this.#spanLen = len;
      else if (len === this.#spanLen) this.#spanLen = 0;
    }
    return false;
  }

  #fenceRest(s: string, i: number): number {
    const nl = s.indexOf('\n', i);
    if (nl < 0) return s.length;
    this.#state = S.FenceLineStart;
    this.#fenceSpaces = 0;
    return nl + 1;
  }

  #fenceLineStart(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (c === SPACE) {
      if (++this.#fenceSpaces > 3) this.#state = S.FenceRest;
      return i + 1;
    }
    if (c === this.#fenceChar) {
      this.#fenceCount = 1;
      this.#state = S.FenceRun;
      return i + 1;
    }
    if (c === NL) {
      this.#fenceSpaces = 0;
      return i + 1;
    }
    this.#state = S.FenceRest;
    return i;
  }

  #fenceRun(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (c === this.#fenceChar) {
      this.#fenceCount++;
      return i + 1;
    }
    const closes = this.#fenceCount >= this.#fenceLen;
    if (closes && (c === SPACE || c === TAB || c === CR)) {
      this.#state = S.FenceTrail;
      return i + 1;
    }
    if (c === NL) {
      if (closes) this.#closeFence();
      else { this.#state = S.FenceLineStart; this.#fenceSpaces = 0; }
      return i + 1;
    }
    this.#state = S.FenceRest;
    return i;
  }

  #fenceTrail(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (c === SPACE || c === TAB || c === CR) return i + 1;
    if (c === NL) {
      this.#closeFence();
      return i + 1;
    }
    this.#state = S.FenceRest;
    return i;
  }

  #closeFence(): void {
    this.#state = S.Text;
    this.#lineStart = true;
    this.#leadSpaces = 0;
    this.#spanLen = 0;
  }

  // ---- opening tag ----

  #notATag(i: number): number {
    if (this.#opts.trackVisible) this.#visible += this.#pending;
    this.#pending = '';
    this.#visStart = i;
    this.#state = S.Text;
    return i;
  }

  #candidateChar(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isLower(c) && this.#candidate.length < 7) {
      this.#candidate += s[i];
      this.#pending += s[i];
      return i + 1;
    }
    if (c === DASH && this.#candidate === 'tf') {
      this.#pending += '-';
      this.#state = S.TfNameStart;
      return i + 1;
    }
    if (this.#opts.legacyTags && isToolName(this.#candidate) && (isBlank(c) || c === SLASH || c === GT)) {
      this.#startTag(this.#candidate, this.#candidate, this.#pending.length);
      this.#state = S.Attrs;
      return i;
    }
    return this.#notATag(i);
  }

  #nameStart(s: string, i: number): number {
    if (!isLower(s.charCodeAt(i))) return this.#notATag(i);
    this.#startTag('', '', 4);
    this.#state = S.TfName;
    return i;
  }

  #startTag(name: string, fullName: string, bytes: number): void {
    this.#pending = '';
    this.#tagName = fullName;
    this.#tag = {
      name, attrs: [], syntaxError: null, openingBytes: bytes, selfClosing: false, closed: false,
      bodyBytes: 0, bodyHasText: false, content: '', edit: null,
    };
  }

  #name(s: string, i: number): number {
    const start = i;
    const n = s.length;
    while (i < n && isNameChar(s.charCodeAt(i))) i++;
    const tag = this.#tag!;
    tag.name += s.slice(start, i);
    tag.openingBytes += i - start;
    if (i < n) {
      this.#tagName = `tf-${tag.name}`;
      this.#state = S.Attrs;
    }
    return i;
  }

  #syntax(problem: string): void {
    this.#tag!.syntaxError ??= problem;
  }

  #consume(s: string, i: number): number {
    this.#tag!.openingBytes += utf8UnitBytes(s.charCodeAt(i));
    return i + 1;
  }

  #attrs(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.#consume(s, i);
    if (c === GT) return this.#endOpening(this.#consume(s, i), false);
    if (c === SLASH) {
      this.#state = S.Slash;
      return this.#consume(s, i);
    }
    if (isLetter(c) || c === 0x5f) {
      this.#attrName = '';
      this.#state = S.AttrName;
      return i;
    }
    this.#syntax(`unexpected '${s[i]}' in the opening tag`);
    this.#state = S.Unquoted;
    return this.#consume(s, i);
  }

  #attrNameChars(s: string, i: number): number {
    const start = i;
    const n = s.length;
    while (i < n && isAttrNameChar(s.charCodeAt(i))) i++;
    this.#attrName += s.slice(start, i);
    this.#tag!.openingBytes += i - start;
    if (i === n) return i;
    if (this.#attrName !== this.#attrName.toLowerCase()) this.#syntax(`attribute names are lower case: '${this.#attrName}'`);
    const c = s.charCodeAt(i);
    if (c === EQ) {
      this.#state = S.BeforeValue;
      return this.#consume(s, i);
    }
    this.#state = isBlank(c) ? S.AfterAttrName : S.Attrs;
    if (!isBlank(c)) this.#syntax(`attribute '${this.#attrName}' has no value`);
    return i;
  }

  #afterAttrName(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.#consume(s, i);
    if (c === EQ) {
      this.#state = S.BeforeValue;
      return this.#consume(s, i);
    }
    this.#syntax(`attribute '${this.#attrName}' has no value`);
    this.#state = S.Attrs;
    return i;
  }

  #beforeValue(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.#consume(s, i);
    if (c === DQ || c === SQ) {
      this.#quote = s[i]!;
      this.#attrValue = '';
      this.#state = S.Value;
      return this.#consume(s, i);
    }
    if (c === GT) {
      this.#syntax(`attribute '${this.#attrName}' has no value`);
      this.#state = S.Attrs;
      return i;
    }
    this.#syntax(`attribute '${this.#attrName}' value must be quoted`);
    this.#state = S.Unquoted;
    return i;
  }

  #value(s: string, i: number): number {
    const end = s.indexOf(this.#quote, i);
    const stop = end < 0 ? s.length : end;
    this.#attrValue += s.slice(i, stop);
    this.#tag!.openingBytes += utf8SliceBytes(s, i, stop);
    if (end < 0) return stop;
    this.#tag!.attrs.push([this.#attrName, decodeAttributeValue(this.#attrValue)]);
    this.#attrValue = '';
    this.#state = S.Attrs;
    return this.#consume(s, end);
  }

  #unquoted(s: string, i: number): number {
    const n = s.length;
    const start = i;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (isBlank(c) || c === GT) {
        this.#state = S.Attrs;
        break;
      }
      i++;
    }
    this.#tag!.openingBytes += utf8SliceBytes(s, start, i);
    return i;
  }

  #slash(s: string, i: number): number {
    if (s.charCodeAt(i) === GT) return this.#endOpening(this.#consume(s, i), true);
    this.#syntax("unexpected '/' in the opening tag");
    this.#state = S.Attrs;
    return i;
  }

  #endOpening(next: number, selfClosing: boolean): number {
    const tag = this.#tag!;
    if (selfClosing) {
      tag.selfClosing = true;
      tag.closed = true;
      return this.#finishTag(next);
    }
    this.#closing = `</${this.#tagName}>`;
    this.#closeMatched = 0;
    if (tag.name === 'edit' && isToolName(tag.name)) this.#edit = new EditBodyReader();
    this.#state = S.BodyStart;
    return next;
  }

  // ---- body ----

  #bodyStart(s: string, i: number): number {
    const c = s.charCodeAt(i);
    this.#state = S.Body;
    if (c === NL) return i + 1;
    if (c === CR) {
      this.#state = S.BodyCr;
      return i + 1;
    }
    return i;
  }

  #bodyCr(s: string, i: number): number {
    this.#state = S.Body;
    if (s.charCodeAt(i) === NL) return i + 1;
    this.#bodyPiece('\r');
    return i;
  }

  #body(s: string, i: number): number {
    const n = s.length;
    while (i < n) {
      if (this.#closeMatched === 0) {
        const lt = s.indexOf('<', i);
        if (lt < 0) {
          this.#bodyPiece(i === 0 ? s : s.slice(i));
          return n;
        }
        if (lt > i) this.#bodyPiece(s.slice(i, lt));
        this.#closeMatched = 1;
        i = lt + 1;
        continue;
      }
      if (s[i] === this.#closing[this.#closeMatched]) {
        i++;
        if (++this.#closeMatched === this.#closing.length) {
          this.#tag!.closed = true;
          return this.#finishTag(i);
        }
        continue;
      }
      // What looked like the closing tag was content; look at this char again.
      this.#bodyPiece(this.#closing.slice(0, this.#closeMatched));
      this.#closeMatched = 0;
    }
    return n;
  }

  #bodyPiece(piece: string): void {
    const tag = this.#tag!;
    tag.bodyBytes += utf8SliceBytes(piece, 0, piece.length);
    if (!isToolName(tag.name)) return;
    const withinLimit = tag.bodyBytes <= this.#opts.bodyLimit;
    if (this.#edit) {
      this.#edit.keepText = withinLimit;
      this.#edit.push(piece);
    } else if (takesBody(tag.name)) {
      tag.content = withinLimit ? tag.content + piece : '';
    } else if (!tag.bodyHasText && NON_BLANK.test(piece)) {
      tag.bodyHasText = true;
    }
  }

  /** The tag is complete (or the stream ended inside its body). Returns where text resumes. */
  #finishTag(next = 0): number {
    const tag = this.#tag!;
    if (this.#edit) {
      tag.edit = tag.closed ? this.#edit.finish() : null;
      this.#edit = null;
    }
    this.#tag = null;
    this.#closeMatched = 0;
    this.#state = S.Text;
    this.#visStart = next;
    const outcome = completeTag(tag, { bodyLimit: this.#opts.bodyLimit, claimId: (id) => this.#sink.claimId(id) });
    if (outcome.ok) this.#sink.command(outcome.command);
    else this.#sink.error(outcome.error);
    return next;
  }
}
