// GNU-style option parsing for the path-aware file commands: enough to know
// which words are operands and which option values name files. Anything not
// declared by the command's descriptor is *not understood*, and the caller
// then treats the command as complex (the policy's default), never as safe.
import type { Word } from '../shell-lexer.ts';

/** How an option takes its value: none, required (glued or next word), or optional (glued only: `-i.bak`, `--in-place=.bak`). */
export type Arity = 'flag' | 'value' | 'optional';
export type OptionSpec = Readonly<Record<string, Arity>>;

export type ParsedOptions = {
  /** Every option seen, by the name declared in the spec (`-t` and `--target-directory` stay apart). */
  opts: Map<string, Word[]>;
  operands: Word[];
  /** Set when an option is not in the spec: the command cannot be read. */
  unknown?: string;
};

/**
 * `-rf` clusters, `-tDIR` / `-t DIR`, `--name=value` / `--name value`,
 * optional values glued only, `--` ends options, and options may follow
 * operands (GNU permutes) unless `stopAtOperand`.
 * @example parseOptions(words('-rf -- a b'), { '-r': 'flag', '-f': 'flag' }).operands // [a, b]
 */
export function parseOptions(words: readonly Word[], spec: OptionSpec, stopAtOperand = false, operand?: RegExp): ParsedOptions {
  const out: ParsedOptions = { opts: new Map(), operands: [] };
  let k = 0;
  let ended = false;
  while (k < words.length) {
    const w = words[k++]!;
    const a = w.text;
    if (ended || !a.startsWith('-') || a === '-' || (stopAtOperand && out.operands.length > 0) || operand?.test(a)) {
      out.operands.push(w);
      continue;
    }
    if (a === '--') { ended = true; continue; }
    const used = a.startsWith('--') ? long(w, words, k, spec, out) : short(w, words, k, spec, out);
    if (used < 0) return out;
    k += used;
  }
  return out;
}

/** Returns how many following words were used as the value, or -1 when not understood. */
function long(w: Word, words: readonly Word[], k: number, spec: OptionSpec, out: ParsedOptions): number {
  const a = w.text;
  const eq = a.indexOf('=');
  const name = eq < 0 ? a : a.slice(0, eq);
  const arity = spec[name];
  if (arity === undefined || (arity === 'flag' && eq >= 0)) return fail(out, a);
  if (eq >= 0) return add(out, name, glued(w, a.slice(eq + 1)), 0);
  if (arity === 'optional' || arity === 'flag') return add(out, name, glued(w, ''), 0);
  if (k >= words.length) return fail(out, a);
  return add(out, name, words[k]!, 1);
}

function short(w: Word, words: readonly Word[], k: number, spec: OptionSpec, out: ParsedOptions): number {
  const a = w.text;
  for (let j = 1; j < a.length; j++) {
    const name = `-${a[j]}`;
    const arity = spec[name];
    if (arity === undefined) return fail(out, a.length > 2 ? `${name} (in ${a})` : a);
    if (arity === 'flag') { add(out, name, glued(w, ''), 0); continue; }
    // A value option takes the rest of the cluster (`-i.bak`, `-tDIR`, `-ie` is suffix "e").
    if (j + 1 < a.length) return add(out, name, glued(w, a.slice(j + 1)), 0);
    if (arity === 'optional') return add(out, name, glued(w, ''), 0);
    if (k >= words.length) return fail(out, a);
    return add(out, name, words[k]!, 1);
  }
  return 0;
}

/** A value glued to its option keeps the word's quoting and expansion marks (conservative: they may belong to the value). */
function glued(w: Word, text: string): Word {
  return { ...w, text };
}

function add(out: ParsedOptions, name: string, value: Word, used: number): number {
  const list = out.opts.get(name);
  if (list) list.push(value);
  else out.opts.set(name, [value]);
  return used;
}

function fail(out: ParsedOptions, what: string): number {
  out.unknown = what;
  return -1;
}

/** Builds a spec from lists: `spec({ flag: ['-r', '--recursive'], value: ['-t'] })`. */
export function optionSpec(lists: { flag?: readonly string[]; value?: readonly string[]; optional?: readonly string[] }): OptionSpec {
  const out: Record<string, Arity> = {};
  for (const n of lists.flag ?? []) out[n] = 'flag';
  for (const n of lists.value ?? []) out[n] = 'value';
  for (const n of lists.optional ?? []) out[n] = 'optional';
  return out;
}

/** True when any of the names was given. */
export function has(p: ParsedOptions, ...names: string[]): boolean {
  return names.some((n) => p.opts.has(n));
}

/** Every value given for any of the names, in no particular order. */
export function values(p: ParsedOptions, ...names: string[]): Word[] {
  return names.flatMap((n) => p.opts.get(n) ?? []);
}
