// bash's ANSI-C quoting, `$'…'`: decoded so rules see what would run
// (`$'\x63url'` is curl). A script that uses it is complex all the same
// (POLICY.md §7); decoding only keeps every forbid inside it visible.

const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?',
};

/** bash's `$'…'` escapes: \xHH, \NNN (octal), \uHHHH, \UHHHHHHHH, \cX and the single-letter ones. */
export function decodeAnsiC(body: string): string {
  return body.replace(/\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c.|.)/gs, (m, e: string) => {
    const k = e[0]!;
    if (k === 'x' || k === 'u' || k === 'U') return safeCodePoint(parseInt(e.slice(1), 16)) ?? m;
    if (k >= '0' && k <= '7') return String.fromCharCode(parseInt(e, 8) & 0xff);
    if (k === 'c' && e.length === 2) return String.fromCharCode(e.charCodeAt(1) & 0x1f);
    return SIMPLE_ESCAPES[k] ?? m;
  });
}

function safeCodePoint(n: number): string | undefined {
  return Number.isInteger(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : undefined;
}
