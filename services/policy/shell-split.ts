// Script → simple commands (POLICY.md §3.2 and §6 "Splitting").
//
// A safe script yields the argv of every simple command, without
// assignments and redirections. A complex one yields a reason plus the
// commands that can still be read out of it, which are only ever used to find
// forbid/prompt rules — never to allow anything.
import { lex, type Word } from './shell-lexer.ts';

/** A redirection of a simple command: the operator as written (`2>`, `>>`, `<`, `>&` …), its target word, where it starts. */
export type Redirection = { op: string; target: Word; at: number };
/**
 * One simple command with what its argv leaves out. `source`: [start, end) of the whole command in the
 * script (assignments and redirections included), set for the commands of a safe script only.
 */
export type SimpleCommand = { argv: string[]; words: Word[]; assigns: string[]; redirs: Redirection[]; source?: [number, number] };

export type SplitScript = {
  /** One argv per simple command, in script order; empty commands are dropped. */
  commands: string[][];
  /** The same commands with their assignments and redirections (and commands that only redirect). */
  simple: SimpleCommand[];
  /** Why the script cannot be split safely; absent for a simple script. */
  complex?: string;
};

/** Reason given when the only thing that makes a script complex is a leading `NAME=value` (§7). */
export const ASSIGNMENT_REASON = 'leading variable assignment';

// Words that open or continue a compound command when they stand where a
// command name would be.
const RESERVED = new Set([
  'if', 'then', 'else', 'elif', 'fi', 'for', 'while', 'until', 'do', 'done',
  'case', 'esac', 'select', 'function', 'coproc', '{', '}', '!', '[[', ']]',
]);
// Heads whose words are not a command at all (`for x in a b`, `case $x in`).
const NON_COMMAND_HEADS = new Set(['for', 'case', 'select', 'function']);
const CONTINUES_ON_NEXT_LINE = new Set(['&&', '||', '|', '|&']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/**
 * Bounds on what one bash command may be, so that checking it stays within a
 * few milliseconds of the event loop (§7). Past them the command is refused,
 * not waved through: a forbid hidden in a huge script must not become a prompt.
 */
export const MAX_SCRIPT_CHARS = 32 * 1024;
export const MAX_SCRIPT_OPERATORS = 256;

/** The reason a script is over the bounds, or undefined. */
export function scriptTooLarge(cmd: string): string | undefined {
  if (cmd.length > MAX_SCRIPT_CHARS) return `script_too_large: ${cmd.length} characters (at most ${MAX_SCRIPT_CHARS}); write long scripts to a file with tf-write and run that`;
  let ops = 0;
  for (let k = 0; k < cmd.length; k++) {
    const c = cmd.charCodeAt(k);
    // ; & | < > ( ` and newline: every separator, redirection and substitution has one.
    if (c === 59 || c === 38 || c === 124 || c === 60 || c === 62 || c === 10 || c === 40 || c === 96) ops++;
  }
  if (ops > MAX_SCRIPT_OPERATORS) return `script_too_large: ${ops} separator, redirection and substitution characters (at most ${MAX_SCRIPT_OPERATORS}); split it or write it to a file`;
  return undefined;
}

// Builtins that change what later commands run or with which environment:
// `export LD_PRELOAD=…; ls` is `LD_PRELOAD=… ls` spelled apart, `hash -p
// /tmp/x ls` and `alias ls=…` swap the program behind a name.
const ENV_SETTERS = new Set(['export', 'declare', 'typeset', 'readonly', 'local']);
const NAME_CHANGERS = new Set(['alias', 'hash', 'enable']);

function shellStateChange(argv: readonly string[]): string | undefined {
  const [head, ...args] = argv;
  if (head === undefined) return undefined;
  if (ENV_SETTERS.has(head) && args.some((a) => a.includes('='))) return `environment change (${head} ${args.find((a) => a.includes('='))!.split('=')[0]}=)`;
  if (NAME_CHANGERS.has(head) && args.length > 0) return `shell state change (${head})`;
  return undefined;
}

type Frame = { words: Word[]; redirs: Redirection[]; dynamicHead: boolean; opener?: string };

export function splitScript(script: string): SplitScript {
  const { tokens, complex: lexComplex } = lex(script);
  let complex = lexComplex;
  const raw: Frame[] = [];
  const stack: Frame[] = [];
  let cur: Frame = newFrame();
  let expectTarget = false;
  let pendingOp = '';
  let pendingAt = 0;
  let lastSep = '';
  let emptySinceSep = true;

  for (const t of tokens) {
    if (expectTarget && t.kind !== 'word') complex ??= 'redirection without a target';
    switch (t.kind) {
      case 'word':
        if (expectTarget) {
          expectTarget = false;
          cur.redirs.push({ op: pendingOp, target: t, at: pendingAt });
        } else cur.words.push(t);
        emptySinceSep = false;
        break;
      case 'redir':
        expectTarget = true;
        pendingOp = t.op;
        pendingAt = t.at ?? 0;
        emptySinceSep = false;
        break;
      case 'sep':
        if (emptySinceSep && !(t.op === '\n' && (lastSep === '' || lastSep === '\n' || lastSep === ';' || lastSep === '&' || CONTINUES_ON_NEXT_LINE.has(lastSep)))) {
          complex ??= `empty command before '${t.op === '\n' ? '\\n' : t.op}'`;
        }
        expectTarget = false;
        cur = finish(raw, cur);
        // A newline right after `&&`, `|`, … continues the same list.
        if (!(t.op === '\n' && CONTINUES_ON_NEXT_LINE.has(lastSep) && emptySinceSep)) lastSep = t.op;
        emptySinceSep = true;
        break;
      case 'open': {
        // `$(…)` in command-name position makes the outer command unreadable.
        if ((t.op === '$(' || t.op === '`') && commandWords(cur.words).length === 0) cur.dynamicHead = true;
        cur.opener = t.op;
        stack.push(cur);
        cur = newFrame();
        expectTarget = false;
        emptySinceSep = true;
        break;
      }
      case 'close':
        cur = finish(raw, cur);
        cur = stack.pop() ?? newFrame();
        // After a subshell `( … )` the outer words are done (`f() { …; }` then
        // reads as `f` and `{ …`); after `$( … )` or `<( … )` they go on.
        if (cur.opener === '(') cur = finish(raw, cur);
        emptySinceSep = false;
        break;
    }
  }
  if (expectTarget) complex ??= 'redirection without a target';
  if (emptySinceSep && CONTINUES_ON_NEXT_LINE.has(lastSep)) complex ??= `nothing after '${lastSep}'`;
  cur = finish(raw, cur);
  for (const f of stack) if (f.words.length > 0) raw.push(f);

  if (complex === undefined) {
    for (const f of raw) {
      const head = commandWords(f.words)[0];
      if (head === undefined) continue;
      if (!head.quoted && RESERVED.has(head.text)) complex ??= `compound command '${head.text}'`;
      else if (head.expanded) complex ??= 'expansion in the command word';
      else if (head.brace) complex ??= 'braces in the command word';
      else complex ??= shellStateChange(commandWords(f.words).map((w) => w.text));
    }
  }
  if (complex === undefined) {
    const simple = raw.map(simpleOf);
    const commands = simple.map((c) => c.argv).filter((a) => a.length > 0);
    const assigned = simple.find((c) => c.assigns.length > 0);
    if (assigned) return { commands, simple, complex: `${ASSIGNMENT_REASON} (${assigned.assigns[0]!.split('=')[0]}=)` };
    return { commands, simple };
  }
  const simple = readableCommands(raw);
  return { commands: simple.map((c) => c.argv).filter((a) => a.length > 0), simple, complex };
}

function newFrame(): Frame {
  return { words: [], redirs: [], dynamicHead: false };
}

function simpleOf(f: Frame): SimpleCommand {
  const { words, redirs } = f;
  const cmd = commandWords(words);
  const assigns = words.slice(0, words.length - cmd.length).map((w) => w.text);
  let start = Infinity;
  let end = 0;
  for (const w of words) { start = Math.min(start, w.start ?? 0); end = Math.max(end, w.end ?? 0); }
  for (const r of redirs) { start = Math.min(start, r.at); end = Math.max(end, r.target.end ?? 0); }
  return { argv: cmd.map((w) => w.text), words: cmd, assigns, redirs, source: [start, end] };
}

/** Ends a frame: keeps it if it has words or redirections, hands back a fresh one. (No closure: see bench/policy.) */
function finish(raw: Frame[], cur: Frame): Frame {
  if (cur.words.length > 0 || cur.redirs.length > 0) raw.push(cur);
  return newFrame();
}

/** Drops leading `NAME=value` words: they set the environment, they are not the command. */
function commandWords(words: Word[]): Word[] {
  let k = 0;
  while (k < words.length && isAssignment(words[k]!)) k++;
  return k === 0 ? words : words.slice(k);
}

function isAssignment(w: Word): boolean {
  const m = ASSIGNMENT.exec(w.text);
  return m !== null && m[0].length <= w.lit;
}

/** Best-effort reading of a complex script, frame by frame. */
function readableCommands(raw: Frame[]): SimpleCommand[] {
  const out: SimpleCommand[] = [];
  for (const f of raw) {
    // The redirections of a frame whose command cannot be read still name files.
    if (f.dynamicHead) {
      if (f.redirs.length > 0) out.push({ argv: [], words: [], assigns: [], redirs: f.redirs });
      continue;
    }
    let redirs = f.redirs;
    // `{` and `}` end a command even without a `;` (`function f { rm -rf /; }`).
    let start = 0;
    for (let k = 0; k <= f.words.length; k++) {
      const w = f.words[k];
      if (w !== undefined && (w.quoted || (w.text !== '{' && w.text !== '}'))) continue;
      if (k > start || (k === f.words.length && redirs.length > 0)) {
        readOne(f.words.slice(start, k), redirs, out);
        redirs = [];
      }
      start = k + 1;
    }
  }
  return out;
}

/** One command of a complex script: keywords peeled off; `for x in …`-style heads are not commands. */
function readOne(frameWords: Word[], redirs: Redirection[], out: SimpleCommand[]): void {
  let words = frameWords;
  let assigns: string[] = [];
  for (;;) {
    const cmd = commandWords(words);
    assigns = assigns.concat(words.slice(0, words.length - cmd.length).map((w) => w.text));
    words = cmd;
    if (words.length === 0 || words[0]!.quoted || !RESERVED.has(words[0]!.text)) break;
    if (NON_COMMAND_HEADS.has(words[0]!.text)) {
      if (redirs.length > 0) out.push({ argv: [], words: [], assigns: [], redirs });
      return;
    }
    words = words.slice(1);
  }
  if (words.length > 0 || redirs.length > 0) out.push({ argv: words.map((w) => w.text), words, assigns, redirs });
}
