// The lexer's vocabulary: token shapes, bash's operator and word-break
// sets, and the small scanners over raw text the lexer calls.

export type Word = {
  kind: 'word';
  text: string;
  /** Any quote or backslash was used: reserved words and `NAME=` need none. */
  quoted: boolean;
  /** Length of the leading unquoted, unexpanded literal run. */
  lit: number;
  /** Contains `$…`, `~` at the start, or a command/arithmetic substitution. */
  expanded: boolean;
  /** Contains an unquoted `{` or `}` (brace expansion or a group). */
  brace: boolean;
  /** Where the lexer read it in the script, [start, end): shown as written (exact for the words of a safe script). */
  start?: number;
  end?: number;
};
/** `at`: where a redirection starts in the script (its fd digits included). */
export type Op = { kind: 'sep' | 'redir' | 'open' | 'close'; op: string; at?: number };
export type Token = Word | Op;
export type LexResult = { tokens: Token[]; complex?: string };

export const SEPARATORS = new Set(['&&', '||', ';', '|', '|&', '&', '\n']);
export const CASE_SEPARATORS = new Set([';;', ';;&', ';&']);
export const HEREDOCS = new Set(['<<', '<<-', '<<<']);
export const PROCESS_SUBST = new Set(['<(', '>(']);
// Longest first, so `&&` wins over `&` and `>>` over `>`.
export const OPERATORS = [';;&', '&>>', '<<<', '<<-', ';;', ';&', '&&', '||', '|&', '&>', '<<', '<>', '<&', '<(', '>>', '>&', '>|', '>(', ';', '|', '&', '<', '>'];
export const WORD_BREAK = new Set([' ', '\t', '\n', '|', '&', ';', '<', '>', '(', ')']);
// Characters a word can take verbatim, in runs: everything but breaks,
// quotes, escapes, expansions and braces. Scanning runs keeps the lexer at a
// few µs per script (see bench/policy).
export const PLAIN_RUN = /[^ \t\n|&;<>()`\\'"$~{}]+/y;
export const OPERATOR_START = new Set([';', '&', '|', '<', '>']);
export const NAME_CHAR = /[A-Za-z0-9_]/;
export const SPECIAL_PARAM = /[@*#?$!\-]/;

export function newWord(): Word {
  return { kind: 'word', text: '', quoted: false, lit: -1, expanded: false, brace: false, start: 0, end: 0 };
}

export const SIMPLE_PARAMETER = /^#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])$/;

export function closingBrace(s: string, from: number): number {
  let depth = 1;
  for (let j = from; j < s.length; j++) {
    if (s[j] === '{') depth++;
    else if (s[j] === '}' && --depth === 0) return j;
  }
  return -1;
}

/** Index of the `'` closing a `$'…'` string that starts at `from`, or -1. */
export function ansiEnd(s: string, from: number): number {
  for (let j = from; j < s.length; j++) {
    if (s[j] === '\\') j++;
    else if (s[j] === "'") return j;
  }
  return -1;
}
