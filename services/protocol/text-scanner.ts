// Plain text between protocol blocks (PROTOCOL.md §4): tracks line starts for
// fences, runs of backticks or tildes, and open inline code spans, and stops
// where a fence opens or a `<` outside a span may start a tag. Jumps between
// interesting characters with indexOf, so prose costs little.

const NL = 0x0a, SPACE = 0x20, LT = 0x3c, BACKTICK = 0x60, TILDE = 0x7e;

export const enum Stop {
  /** The chunk is used up. */
  End,
  /** A fence opened; `fenceChar` and `fenceLength` say which. The stop index is the char after its run. */
  Fence,
  /** A `<` outside any code span, at the stop index. */
  Angle,
}

function indexOrEnd(s: string, ch: string, from: number): number {
  const at = s.indexOf(ch, from);
  return at < 0 ? s.length : at;
}

// Public fields: the parser's one-character fast path reads them on every delta.
export class TextScanner {
  lineStart = true;
  leadSpaces = 0;
  runChar = 0;
  runLength = 0;
  runAtLineStart = false;
  spanLength = 0;
  stop = Stop.End;
  fenceChar = 0;
  fenceLength = 0;

  /** Whether a one-character delta `c` can be taken as plain visible text without scanning. */
  isPlain(c: number): boolean {
    return this.runChar === 0 && !this.lineStart && c !== LT && c !== BACKTICK && c !== NL;
  }

  /** Scans `s` from `i`; returns where it stopped and sets `stop` to why. */
  scan(s: string, i: number): number {
    const n = s.length;
    // Next '<', '`' and '\n' at or after i (n when none). Each is searched again
    // only once passed, so every character is scanned at most once per kind.
    let nextLt = -1;
    let nextTick = -1;
    let nextNl = -1;
    while (i < n) {
      if (this.runChar === 0 && !this.lineStart) {
        if (nextLt < i) nextLt = indexOrEnd(s, '<', i);
        if (nextTick < i) nextTick = indexOrEnd(s, '`', i);
        if (nextNl < i) nextNl = indexOrEnd(s, '\n', i);
        i = Math.min(nextLt, nextTick, nextNl);
        if (i === n) break;
      }
      const c = s.charCodeAt(i);
      if (this.runChar !== 0) {
        if (c === this.runChar) {
          this.runLength++;
          i++;
          continue;
        }
        if (this.endRun()) {
          this.stop = Stop.Fence;
          return i;
        }
      }
      if (this.lineStart) {
        if (c === SPACE) {
          if (++this.leadSpaces > 3) this.lineStart = false;
          i++;
          continue;
        }
        this.lineStart = false;
        if (c === BACKTICK || c === TILDE) {
          this.startRun(c, true);
          i++;
          continue;
        }
      }
      if (c === NL) {
        this.spanLength = 0;
        this.lineStart = true;
        this.leadSpaces = 0;
      } else if (c === BACKTICK) {
        this.startRun(c, false);
      } else if (c === LT && this.spanLength === 0) {
        this.stop = Stop.Angle;
        return i;
      }
      i++;
    }
    this.stop = Stop.End;
    return n;
  }

  /** A run of backticks or tildes ended; returns true when it opened a fence. */
  endRun(): boolean {
    const ch = this.runChar;
    const len = this.runLength;
    this.runChar = 0;
    if (this.runAtLineStart && len >= 3) {
      this.fenceChar = ch;
      this.fenceLength = len;
      return true;
    }
    if (ch === BACKTICK) {
      if (this.spanLength === 0) this.spanLength = len;
      else if (len === this.spanLength) this.spanLength = 0;
    }
    return false;
  }

  /** A fence closed: the next character starts a line, outside any span. */
  afterFence(): void {
    this.lineStart = true;
    this.leadSpaces = 0;
    this.spanLength = 0;
  }

  private startRun(c: number, atLineStart: boolean): void {
    this.runChar = c;
    this.runLength = 1;
    this.runAtLineStart = atLineStart;
  }
}
