// Reads an opening tag after its name has started: the name, attributes in
// double or single quotes, `>` or `/>` (PROTOCOL.md §1, §7). Syntax trouble is
// remembered, not thrown, so the tag can still be skipped to its end.
import { decodeAttributeValue } from './tag.ts';
import { utf8SliceBytes, utf8UnitBytes } from './utf8.ts';

const enum A { Name, Between, AttrName, AfterAttrName, BeforeValue, Value, Unquoted, Slash, Done }

const NL = 0x0a, CR = 0x0d, TAB = 0x09, SPACE = 0x20, GT = 0x3e, SLASH = 0x2f, EQ = 0x3d, DQ = 0x22, SQ = 0x27;
export const isBlank = (c: number) => c === SPACE || c === NL || c === TAB || c === CR || c === 0x0c;
export const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isLetter = (c: number) => isLower(c) || (c >= 0x41 && c <= 0x5a);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isNameChar = (c: number) => isLetter(c) || isDigit(c) || c === 0x5f || c === 0x2d;
const isAttrNameChar = (c: number) => isNameChar(c) || c === 0x3a || c === 0x2e;

// Plain `private` fields instead of `#fields`: this class runs once per input
// character with 1-byte deltas, and plain properties are the cheaper access.
export class OpeningTagReader {
  name: string;
  readonly attrs: Array<[string, string]> = [];
  syntaxError: string | null = null;
  /** UTF-8 bytes from `<` to the current position. */
  bytes: number;
  selfClosing = false;
  private state: A;
  private attrName = '';
  private attrValue = '';
  private quote = '';

  /** `name` is complete for legacy tags; for `tf-` tags it grows as bytes arrive. */
  constructor(name: string, bytesSoFar: number, nameComplete: boolean) {
    this.name = name;
    this.bytes = bytesSoFar;
    this.state = nameComplete ? A.Between : A.Name;
  }

  get done(): boolean {
    return this.state === A.Done;
  }

  /** The `id` attribute, if it was read. */
  get id(): string | undefined {
    return this.attrs.find(([key]) => key === 'id')?.[1];
  }

  /** Consumes characters up to the end of the opening tag; returns where it stopped. */
  read(s: string, i: number): number {
    const n = s.length;
    while (i < n && this.state !== A.Done) {
      switch (this.state) {
        case A.Name: i = this.readName(s, i); break;
        case A.Between: i = this.between(s, i); break;
        case A.AttrName: i = this.readAttrName(s, i); break;
        case A.AfterAttrName: i = this.afterAttrName(s, i); break;
        case A.BeforeValue: i = this.beforeValue(s, i); break;
        case A.Value: i = this.readValue(s, i); break;
        case A.Unquoted: i = this.unquoted(s, i); break;
        case A.Slash: i = this.slash(s, i); break;
      }
    }
    return i;
  }

  private problem(text: string): void {
    this.syntaxError ??= text;
  }

  private consume(s: string, i: number): number {
    this.bytes += utf8UnitBytes(s.charCodeAt(i));
    return i + 1;
  }

  /** Moves to `to` past the character at `i`. */
  private step(to: A, s: string, i: number): number {
    this.state = to;
    return this.consume(s, i);
  }

  private readName(s: string, i: number): number {
    const start = i;
    while (i < s.length && isNameChar(s.charCodeAt(i))) i++;
    this.name += s.slice(start, i);
    this.bytes += i - start;
    if (i < s.length) this.state = A.Between;
    return i;
  }

  private between(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.consume(s, i);
    if (c === GT) return this.step(A.Done, s, i);
    if (c === SLASH) return this.step(A.Slash, s, i);
    if (isLetter(c) || c === 0x5f) {
      this.attrName = '';
      this.state = A.AttrName;
      return i;
    }
    this.problem(`unexpected '${s[i]}' in the opening tag`);
    return this.step(A.Unquoted, s, i);
  }

  private readAttrName(s: string, i: number): number {
    const start = i;
    while (i < s.length && isAttrNameChar(s.charCodeAt(i))) i++;
    this.attrName += s.slice(start, i);
    this.bytes += i - start;
    if (i === s.length) return i;
    if (this.attrName !== this.attrName.toLowerCase()) this.problem(`attribute names are lower case: '${this.attrName}'`);
    if (isBlank(s.charCodeAt(i))) {
      this.state = A.AfterAttrName;
      return i;
    }
    return this.afterAttrName(s, i);
  }

  private afterAttrName(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.consume(s, i);
    if (c === EQ) return this.step(A.BeforeValue, s, i);
    this.problem(`attribute '${this.attrName}' has no value`);
    this.state = A.Between;
    return i;
  }

  private beforeValue(s: string, i: number): number {
    const c = s.charCodeAt(i);
    if (isBlank(c)) return this.consume(s, i);
    if (c === DQ || c === SQ) {
      this.quote = s[i]!;
      this.attrValue = '';
      return this.step(A.Value, s, i);
    }
    this.problem(c === GT ? `attribute '${this.attrName}' has no value` : `attribute '${this.attrName}' value must be quoted`);
    this.state = c === GT ? A.Between : A.Unquoted;
    return i;
  }

  private readValue(s: string, i: number): number {
    const end = s.indexOf(this.quote, i);
    const stop = end < 0 ? s.length : end;
    this.attrValue += s.slice(i, stop);
    this.bytes += utf8SliceBytes(s, i, stop);
    if (end < 0) return stop;
    this.attrs.push([this.attrName, decodeAttributeValue(this.attrValue)]);
    this.attrValue = '';
    return this.step(A.Between, s, end);
  }

  /** Skips a value written without quotes (or other junk) up to a blank or `>`. */
  private unquoted(s: string, i: number): number {
    const start = i;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (isBlank(c) || c === GT) {
        this.state = A.Between;
        break;
      }
      i++;
    }
    this.bytes += utf8SliceBytes(s, start, i);
    return i;
  }

  private slash(s: string, i: number): number {
    if (s.charCodeAt(i) === GT) {
      this.selfClosing = true;
      return this.step(A.Done, s, i);
    }
    this.problem("unexpected '/' in the opening tag");
    this.state = A.Between;
    return i;
  }
}
