// Inside a fenced code block (PROTOCOL.md §4): everything is inert until a line
// of at most three spaces, at least as many of the same fence character, and
// only blanks after them.
const enum F { RestOfLine, LineStart, Run, Trail, Closed }
const NL = 0x0a, CR = 0x0d, TAB = 0x09, SPACE = 0x20;

export class FenceReader {
  private state = F.RestOfLine;
  private spaces = 0;
  private count = 0;
  private readonly char: number;
  private readonly length: number;

  /** Starts on the opening line, right after its run of fence characters. */
  constructor(char: number, length: number) {
    this.char = char;
    this.length = length;
  }

  get closed(): boolean {
    return this.state === F.Closed;
  }

  /** Consumes inert text up to and including the closing line's line break. */
  read(s: string, i: number): number {
    const n = s.length;
    while (i < n) {
      const c = s.charCodeAt(i);
      switch (this.state) {
        case F.RestOfLine: {
          const nl = s.indexOf('\n', i);
          if (nl < 0) return n;
          this.state = F.LineStart;
          this.spaces = 0;
          i = nl + 1;
          break;
        }
        case F.LineStart:
          if (c === SPACE) {
            if (++this.spaces > 3) this.state = F.RestOfLine;
            i++;
          } else if (c === this.char) {
            this.count = 1;
            this.state = F.Run;
            i++;
          } else if (c === NL) {
            this.spaces = 0;
            i++;
          } else this.state = F.RestOfLine;
          break;
        case F.Run:
          if (c === this.char) {
            this.count++;
            i++;
          } else if (c === NL) {
            i++;
            if (this.count >= this.length) {
              this.state = F.Closed;
              return i;
            }
            this.state = F.LineStart;
            this.spaces = 0;
          } else if (this.count >= this.length && (c === SPACE || c === TAB || c === CR)) {
            this.state = F.Trail;
            i++;
          } else this.state = F.RestOfLine;
          break;
        case F.Trail:
          if (c === NL) {
            this.state = F.Closed;
            return i + 1;
          }
          if (c === SPACE || c === TAB || c === CR) i++;
          else this.state = F.RestOfLine;
          break;
        case F.Closed:
          return i;
      }
    }
    return i;
  }
}
