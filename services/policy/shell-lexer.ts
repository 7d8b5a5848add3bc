// A quote-aware bash lexer, just deep enough to split a script into simple
// commands and to notice every construct that makes splitting unsafe.
//
// Why not shell-quote: it treats newline as blank (so `ls\nrm -rf /` would be
// one command), cannot tell `2>f` from `2 >f`, splits `"$HOME/x"` into two
// words and does not see backticks — each a policy bypass or a wrong argv.
// sh-syntax is async WASM (evaluate must stay sync and fast) and mvdan-sh is
// a deprecated GopherJS build. This lexer is the small subset we need.
//
// It never throws: unsafe or malformed input is reported through `complex`
// and the tokens read so far are still returned, so the caller can read
// simple commands out of a complex script.

import { decodeAnsiC } from './ansi-c.ts';
import {
  SEPARATORS, CASE_SEPARATORS, HEREDOCS, PROCESS_SUBST, OPERATORS, WORD_BREAK, PLAIN_RUN, OPERATOR_START, NAME_CHAR, SPECIAL_PARAM, newWord, SIMPLE_PARAMETER, closingBrace, ansiEnd,
  type LexResult, type Token, type Word,
} from './shell-tokens.ts';

export type { LexResult, Op, Token, Word } from './shell-tokens.ts';

export function lex(script: string): LexResult {
  const l = new Lexer(script);
  l.list(null);
  return { tokens: l.tokens, complex: l.complex };
}

class Lexer {
  i = 0;
  tokens: Token[] = [];
  complex: string | undefined;
  private w: Word = newWord();
  private fd = '';

  constructor(private readonly s: string) {}

  private flag(reason: string): void {
    this.complex ??= reason;
  }

  /** Reads commands until EOF or the terminator of an enclosing substitution. */
  list(term: ')' | '`' | null): void {
    const s = this.s;
    let depth = 0;
    while (this.i < s.length) {
      const c = s[this.i]!;
      if (c === ' ' || c === '\t') { this.i++; continue; }
      if (c === '\\' && s[this.i + 1] === '\n') { this.i += 2; continue; }
      if (term === '`' && c === '`') { this.i++; return; }
      if (c === '#') { const nl = s.indexOf('\n', this.i); this.i = nl < 0 ? s.length : nl; continue; }
      if (c === ')') {
        this.i++;
        if (depth > 0) { depth--; this.tokens.push({ kind: 'close', op: ')' }); continue; }
        if (term === ')') return;
        this.flag('unbalanced )');
        this.tokens.push({ kind: 'close', op: ')' });
        continue;
      }
      if (c === '(') { this.i++; depth++; this.flag('subshell ( )'); this.tokens.push({ kind: 'open', op: '(' }); continue; }
      const op = OPERATOR_START.has(c) ? this.operatorAt() : undefined;
      if (op !== undefined) {
        const at = this.i - this.fd.length;
        this.i += op.length;
        if (PROCESS_SUBST.has(op)) {
          this.flag('process substitution <( )');
          depth++;
          this.tokens.push({ kind: 'open', op });
        } else if (SEPARATORS.has(op)) {
          this.tokens.push({ kind: 'sep', op });
        } else if (CASE_SEPARATORS.has(op)) {
          this.flag('case clause');
          this.tokens.push({ kind: 'sep', op });
        } else {
          if (HEREDOCS.has(op)) this.flag('here-document');
          this.tokens.push({ kind: 'redir', op: this.fd + op, at });
        }
        this.fd = '';
        continue;
      }
      if (c === '\n') { this.i++; this.tokens.push({ kind: 'sep', op: '\n' }); continue; }
      this.word(term);
    }
    if (term === ')') this.flag('unterminated $( )');
    if (term === '`') this.flag('unterminated backquote');
  }

  private operatorAt(): string | undefined {
    for (const op of OPERATORS) if (this.s.startsWith(op, this.i)) return op;
    return undefined;
  }

  private word(term: ')' | '`' | null): void {
    const s = this.s;
    this.w = newWord();
    this.w.start = this.i;
    while (this.i < s.length) {
      PLAIN_RUN.lastIndex = this.i;
      if (PLAIN_RUN.test(s)) {
        this.w.text += s.slice(this.i, PLAIN_RUN.lastIndex);
        this.i = PLAIN_RUN.lastIndex;
        continue;
      }
      const c = s[this.i]!;
      if (WORD_BREAK.has(c)) break;
      if (c === '`') {
        if (term === '`') break;
        this.substitution('`');
        continue;
      }
      if (c === '\\') {
        this.quote();
        if (s[this.i + 1] === '\n') { this.i += 2; continue; }
        this.w.text += s[this.i + 1] ?? '';
        this.i += 2;
        continue;
      }
      if (c === "'") {
        this.quote();
        const end = s.indexOf("'", this.i + 1);
        if (end < 0) {
          this.flag('unterminated quote');
          this.w.text += s.slice(this.i + 1);
          this.i = s.length;
          break;
        }
        this.w.text += s.slice(this.i + 1, end);
        this.i = end + 1;
        continue;
      }
      if (c === '"') {
        this.quote();
        this.i++;
        this.doubleQuoted();
        continue;
      }
      if (c === '$') { this.dollar(false); continue; }
      if (c === '~' && this.w.text.length === 0 && !this.w.quoted) this.expand();
      if (c === '{' || c === '}') this.w.brace = true;
      this.w.text += c;
      this.i++;
    }
    // `2>f`: digits glued to a redirection are its fd, not an argument.
    const next = s[this.i];
    if ((next === '<' || next === '>') && !this.w.quoted && /^[0-9]+$/.test(this.w.text)) {
      this.fd = this.w.text;
      return;
    }
    this.w.end = this.i;
    this.flushWord();
  }

  private flushWord(): void {
    const w = this.w;
    if (w.text.length > 0 || w.quoted || w.expanded) {
      if (w.lit < 0) w.lit = w.text.length;
      this.tokens.push(w);
    }
    this.w = newWord();
  }

  private quote(): void {
    if (this.w.lit < 0) this.w.lit = this.w.text.length;
    this.w.quoted = true;
  }

  private expand(): void {
    if (this.w.lit < 0) this.w.lit = this.w.text.length;
    this.w.expanded = true;
  }

  private doubleQuoted(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s[this.i]!;
      if (c === '"') { this.i++; return; }
      if (c === '\\') {
        const nx = s[this.i + 1];
        if (nx === '\n') { this.i += 2; continue; }
        if (nx !== undefined && '$`"\\'.includes(nx)) { this.w.text += nx; this.i += 2; continue; }
        this.w.text += '\\';
        this.i++;
        continue;
      }
      if (c === '$') { this.dollar(true); continue; }
      if (c === '`') { this.substitution('`'); continue; }
      this.w.text += c;
      this.i++;
    }
    this.flag('unterminated quote');
  }

  private dollar(inDq: boolean): void {
    const s = this.s;
    const nx = s[this.i + 1];
    if (nx === '(' && s[this.i + 2] === '(') {
      // $(( … )): arithmetic, not commands; only a nested $( ) or `…` would
      // run anything, and those still make the script complex.
      this.flag('arithmetic expansion $(( ))');
      this.expand();
      const end = s.indexOf('))', this.i + 3);
      const stop = end < 0 ? s.length : end + 2;
      this.w.text += s.slice(this.i, stop);
      this.i = stop;
      return;
    }
    if (nx === '(') {
      this.flag('command substitution $( )');
      this.i++; // substitution() skips the '('
      this.substitution('$(');
      return;
    }
    this.expand();
    if (nx === '{') {
      const end = closingBrace(s, this.i + 2);
      const inner = s.slice(this.i + 2, end < 0 ? s.length : end);
      if (end < 0) this.flag('unterminated ${ }');
      // Only `${NAME}`, `${#NAME}`, `${1}` and `${@}`-like forms are read with
      // certainty. With an operator (`${x:-'}'}`, `${x:-{}`) bash's quoting and
      // brace rules decide where it ends, and a misread end would hide the
      // commands after it: the script is complex.
      else if (!SIMPLE_PARAMETER.test(inner)) this.flag('parameter expansion with an operator ${…}');
      if (inner.includes('$(') || inner.includes('`')) this.flag('command substitution $( )');
      this.w.text += '${' + inner + '}';
      this.i = end < 0 ? s.length : end + 1;
      return;
    }
    if (!inDq && (nx === "'" || nx === '"')) {
      // $'…' decodes escapes (`$'\x63url'` is curl) and $"…" translates: the
      // text is not what the shell runs, so the script is complex (§7).
      this.flag(nx === "'" ? "ANSI-C quoting $'…'" : 'locale quoting $"…"');
      if (nx === '"') { this.i++; return; }
      // Decoded, so that rules see what runs (`$'\x63url'` reads as curl) even
      // though the script is complex.
      this.quote();
      const end = ansiEnd(s, this.i + 2);
      this.w.text += decodeAnsiC(s.slice(this.i + 2, end < 0 ? s.length : end));
      if (end < 0) this.flag('unterminated quote');
      this.i = end < 0 ? s.length : end + 1;
      return;
    }
    if (nx !== undefined && NAME_CHAR.test(nx)) {
      let j = this.i + 1;
      if (/[0-9]/.test(nx)) j++;
      else while (j < s.length && NAME_CHAR.test(s[j]!)) j++;
      this.w.text += s.slice(this.i, j);
      this.i = j;
      return;
    }
    if (nx !== undefined && SPECIAL_PARAM.test(nx)) {
      this.w.text += s.slice(this.i, this.i + 2);
      this.i += 2;
      return;
    }
    // A lone `$` is a literal dollar sign.
    this.w.text += '$';
    this.i++;
  }

  /**
   * `$( … )` or backquotes: the word so far is kept (if it has text), the inner commands are
   * emitted between open/close tokens so they can still be read out, and the
   * word goes on after them (marked as expanded).
   */
  private substitution(kind: '$(' | '`'): void {
    if (kind === '`') this.flag('backquote substitution');
    const outer = this.w;
    this.flushWord();
    this.i++;
    this.tokens.push({ kind: 'open', op: kind });
    this.list(kind === '`' ? '`' : ')');
    this.tokens.push({ kind: 'close', op: kind === '`' ? '`' : ')' });
    // The word after the substitution stands for its output (even when empty),
    // so argument positions stay where the shell would put them.
    this.w = newWord();
    this.w.quoted = outer.quoted;
    this.w.lit = 0;
    this.w.expanded = true;
  }
}
