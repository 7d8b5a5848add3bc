// What the model said just before a command (API.md, additions 2026-12-01:
// an approval's `context.preceding_text`): the visible text and reasoning
// before its tag, the last PRECEDING_TEXT_BYTES of it. An operator reads it
// to learn why the agent asks; the start, far from the tag, matters least.

/** The most of the model's words kept before a command, in UTF-8 bytes (2 KiB). */
export const PRECEDING_TEXT_BYTES = 2048;

/**
 * The end of `s` that fits `maxBytes` of UTF-8, never starting inside a
 * character (a lone low surrogate is dropped with its pair's other half).
 * @example tailUtf8('héllo', 4) // 'llo'
 */
export function tailUtf8(s: string, maxBytes: number): string {
  // Every UTF-16 unit is at most 3 bytes: a cheap first cut before counting exactly.
  let start = Math.max(0, s.length - maxBytes);
  let bytes = Buffer.byteLength(s.slice(start), 'utf8');
  while (bytes > maxBytes && start < s.length) {
    const c = s.charCodeAt(start);
    const pair = c >= 0xd800 && c <= 0xdbff && start + 1 < s.length;
    bytes -= pair ? 4 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    start += pair ? 2 : 1;
  }
  const c = s.charCodeAt(start);
  if (c >= 0xdc00 && c <= 0xdfff) start += 1;
  return s.slice(start);
}

/** The reasoning and then the visible text before a command, trimmed and cut to their last `maxBytes`. */
export function precedingText(reasoning: string, text: string, maxBytes = PRECEDING_TEXT_BYTES): string {
  // Only the ends can survive the cut: no need to join megabytes first.
  const r = tailUtf8(reasoning, maxBytes).trim();
  const t = tailUtf8(text, maxBytes).trim();
  return tailUtf8(r && t ? `${r}\n\n${t}` : r || t, maxBytes).trim();
}
