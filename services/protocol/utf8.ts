// UTF-8 helpers for the parser. Deltas may arrive as bytes split inside a
// multi-byte character; sizes in PROTOCOL.md are counted in UTF-8 bytes.

const ASCII = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i));

/**
 * Incremental UTF-8 decoder. Wraps the platform TextDecoder in streaming mode
 * and keeps a table fast path for the 1-byte ASCII delta case, which the
 * 1-byte-delta benchmark hits millions of times.
 */
export class Utf8StreamDecoder {
  // ignoreBOM: a leading U+FEFF is content like any other character, as in a string delta.
  #decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  /** Whether the platform decoder may be holding an incomplete sequence. */
  #pending = false;

  decode(bytes: Uint8Array): string {
    if (bytes.length === 1 && !this.#pending) {
      const b = bytes[0]!;
      if (b < 0x80) return ASCII[b]!;
    }
    const text = this.#decoder.decode(bytes, { stream: true });
    this.#pending = endsInsideSequence(bytes);
    return text;
  }

  /** Flushes an incomplete trailing sequence (as U+FFFD, like TextDecoder). */
  end(): string {
    this.#pending = false;
    return this.#decoder.decode();
  }
}

/** True when the last bytes start a multi-byte sequence that is not complete yet. */
function endsInsideSequence(bytes: Uint8Array): boolean {
  const n = bytes.length;
  for (let back = 1; back <= 3 && back <= n; back++) {
    const b = bytes[n - back]!;
    if (b < 0x80) return false;
    if (b >= 0xc0) {
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      return need > back;
    }
  }
  // Only continuation bytes seen: a lead byte may sit in an earlier delta.
  return n < 4;
}

/** UTF-8 size of one UTF-16 code unit (a surrogate half counts 2: a pair is 4). */
export function utf8UnitBytes(code: number): number {
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code < 0xe000) return 2;
  return 3;
}

/** UTF-8 size of `text.slice(start, end)`. */
export function utf8SliceBytes(text: string, start: number, end: number): number {
  if (end - start > 64) {
    // Buffer counts a lone surrogate as 3 bytes; a pair split across string
    // deltas must still count 4 in total, so the halves at the edges count 2.
    let bytes = Buffer.byteLength(text.slice(start, end), 'utf8');
    const first = text.charCodeAt(start);
    const last = text.charCodeAt(end - 1);
    if (first >= 0xdc00 && first < 0xe000) bytes -= 1;
    if (last >= 0xd800 && last < 0xdc00) bytes -= 1;
    return bytes;
  }
  let bytes = 0;
  for (let i = start; i < end; i++) bytes += utf8UnitBytes(text.charCodeAt(i));
  return bytes;
}
