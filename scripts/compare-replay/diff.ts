// Every difference between two normalised values, one line each, by path.
// Arrays are aligned first (jsdiff's diffArrays), so one extra event shows as
// one line "only in new", not as every later event differing; a removed and
// an added run of the same length are compared element by element.
import { diffArrays } from 'diff';

const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A short label of an element that is only on one side (an event's name, a record's id and status). */
function label(v: unknown): string {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if (typeof o.event === 'string') return `${o.event} ${JSON.stringify(o.data).slice(0, 300)}`;
    if ('id' in o && 'status' in o) return `record id=${show(o.id)} turn=${show(o.turn)} ${show(o.tool)} status=${show(o.status)}`;
  }
  return show(v).slice(0, 300);
}

/** Where two strings part, with some context on each side. */
function stringDiff(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 60);
  const cut = (s: string) => JSON.stringify(s.slice(from, i + 120));
  return `strings differ at character ${i} (lengths ${a.length} and ${b.length}):\n      old …${cut(a)}…\n      new …${cut(b)}…`;
}

function arrayDiff(a: unknown[], b: unknown[], path: string, out: string[]): void {
  if (a.length === b.length) {
    a.forEach((v, i) => diffValues(v, b[i], `${path}[${i}]`, out));
    return;
  }
  const parts = diffArrays(a, b, { comparator: same });
  let [i, j] = [0, 0];
  for (let k = 0; k < parts.length; k++) {
    const p = parts[k]!;
    const next = parts[k + 1];
    if (p.removed && next?.added && next.count === p.count) {
      p.value.forEach((v, n) => diffValues(v, next.value[n], `${path}[${i + n}→${j + n}]`, out));
      i += p.count;
      j += p.count;
      k++;
    } else if (p.removed) {
      p.value.forEach((v, n) => out.push(`${path}[${i + n}] only in old: ${label(v)}`));
      i += p.count;
    } else if (p.added) {
      p.value.forEach((v, n) => out.push(`${path}[${j + n}] only in new: ${label(v)}`));
      j += p.count;
    } else {
      i += p.count;
      j += p.count;
    }
  }
}

export function diffValues(a: unknown, b: unknown, path: string, out: string[]): void {
  if (same(a, b)) return;
  if (Array.isArray(a) && Array.isArray(b)) return arrayDiff(a, b, path, out);
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const [x, y] = [a as Record<string, unknown>, b as Record<string, unknown>];
    const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])];
    for (const k of keys) diffValues(x[k], y[k], `${path}.${k}`, out);
    return;
  }
  if (typeof a === 'string' && typeof b === 'string' && (a.length > 80 || b.length > 80)) {
    out.push(`${path}: ${stringDiff(a, b)}`);
    return;
  }
  out.push(`${path}: old ${show(a)}  new ${show(b)}`);
}

/** Tails of interrupted turns (normalise.ts, cutTails): equal enough when one is a prefix of the other. */
export function diffTails(a: Record<string, string>, b: Record<string, string>, out: string[]): void {
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
    const [x, y] = [a[k] ?? '', b[k] ?? ''];
    if (!x.startsWith(y) && !y.startsWith(x)) out.push(`tail of ${k} (after the turn's last command): ${stringDiff(x, y)}`);
  }
}
