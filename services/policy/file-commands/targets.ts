// What a path-aware command writes, as written in its words (relative to the
// shell's working directory; redirects.ts resolves them against every
// directory a `cd` may have reached). A target has a scope:
//   self — the path itself (`touch f`, `tee f`, `mv a b` writes b);
//   tree — the path and everything under it (`rm -r d`, `mv d x` removes d);
//   some — unknown entries under the path (`tar -x -C d`, `find d -name x
//          -delete`, `cp *.txt d/`): a rule that matches every entry there
//          applies, one that may match some entry makes the script complex.
// A word the text cannot pin down (an expansion, brace expansion, find's
// `{}`) makes the command complex: what it writes is unknown.
import type { Word } from '../shell-lexer.ts';

export type Scope = 'self' | 'tree' | 'some';
/** `dotOk`: for `some`, whether an entry right under the path may start with a dot (a pattern like `*.o` cannot reach `.git`). */
export type Target = { path: string; scope: Scope; dotOk: boolean };
export type Targets = { targets: Target[]; complex?: string };

const GLOB = /[*?[]/;
const PWD = /^(?:\$PWD|\$\{PWD\})(?=\/|$)/;
const HOME = /^(?:~[A-Za-z0-9_.-]*|\$HOME|\$\{HOME\})(?=\/|$)/;

/** Collects the targets of one command; descriptors call it. */
export class TargetSink {
  readonly targets: Target[] = [];
  complex: string | undefined;

  constructor(readonly program: string) {}

  unknown(reason: string): void {
    this.complex ??= `${reason} of ${this.program}`;
  }

  /** The path a word names, with `self` or `tree` scope (a pattern: `some` under its fixed part). */
  write(w: Word | undefined, scope: 'self' | 'tree'): void {
    const p = w && this.pathOf(w);
    if (p === undefined) return;
    const glob = GLOB.test(p);
    if (!glob) { this.push(p, scope, true); return; }
    const { dir, rest } = splitPattern(p);
    // `rm -rf d/*` deletes all of d that matters: judged as deleting d; so do `?*`, `*?` (wildcards only).
    if (scope === 'tree' && rest.length === 1 && /^[*?]*\*[*?]*$/.test(rest[0]!)) this.push(dir, 'tree', true);
    else this.push(dir, 'some', rest[0]!.startsWith('.') || rest[0]!.startsWith('['));
  }

  /** Unknown entries under the path a word names. */
  below(w: Word | undefined): void {
    const p = w && this.pathOf(w);
    if (p !== undefined) this.push(GLOB.test(p) ? splitPattern(p).dir : p, 'some', true);
  }

  /** `dir/<basename of src>` (cp, mv, ln, install into a directory). */
  into(dir: Word | undefined, src: Word | undefined, scope: 'self' | 'tree'): void {
    const d = dir && this.pathOf(dir);
    if (d === undefined) return;
    const base = src && this.pathOf(src)?.replace(/\/+$/, '').split('/').pop();
    if (GLOB.test(d)) { this.below(dir); return; }
    if (base === undefined || base === '' || base === '.' || base === '..' || GLOB.test(base)) this.push(d, 'some', true);
    else this.push(`${d.replace(/\/+$/, '')}/${base}`, scope, true);
  }

  /** A destination that may be a file or an existing directory: both are written. */
  dest(dir: Word | undefined, src: Word | undefined, scope: 'self' | 'tree'): void {
    const text = dir?.text ?? '';
    if (!/(^|\/)\.{0,2}$/.test(text)) this.write(dir, scope);
    this.into(dir, src, scope);
  }

  private push(path: string, scope: Scope, dotOk: boolean): void {
    this.targets.push({ path, scope, dotOk });
  }

  /** The text of a path word, `$PWD` read as the working directory; undefined when it is not a workspace path or unknown. */
  private pathOf(w: Word): string | undefined {
    if (w.text.includes('{}')) { this.unknown("find's {} placeholder in a path argument"); return undefined; }
    let text = w.text;
    if (w.expanded) {
      if (HOME.test(text)) return undefined; // the home directory is outside the workspace
      text = text.replace(PWD, '.');
      if (/[$`~]/.test(text)) { this.unknown('expansion in a path argument'); return undefined; }
    }
    if (w.brace && /[{}]/.test(text)) { this.unknown('brace expansion in a path argument'); return undefined; }
    return text === '' ? undefined : text;
  }
}

/** `src/*.o` → dir `src`, rest [`*.o`]: the fixed directory a pattern starts in. */
function splitPattern(p: string): { dir: string; rest: string[] } {
  const segs = p.split('/');
  const k = segs.findIndex((s) => GLOB.test(s));
  const head = segs.slice(0, k);
  const dir = head.length === 0 ? '.' : head.join('/') === '' ? '/' : head.join('/');
  return { dir, rest: segs.slice(k).filter((s) => s !== '') };
}

/** `scope:path` for examples and tests (`some` with a dot flag: `some.:path`). */
export function showTarget(t: Target): string {
  return `${t.scope === 'some' && t.dotOk ? 'some.' : t.scope}:${t.path}`;
}
