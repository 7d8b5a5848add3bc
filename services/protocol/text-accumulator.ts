// Appends many small strings cheaply and keeps the result cheap to hold.
// `s += piece` per delta builds one rope node per piece: with 1-byte deltas
// that is a node per character, and a long rope makes every garbage
// collection walk it. Small pieces go to a char-code block, larger ones to a
// batch joined every BATCH pieces, so the rope has few, large, flat leaves.
const BLOCK = 4096;
const BATCH = 256;

export class TextAccumulator {
  private text = '';
  private batch: string[] = [];
  /** Allocated on the first small piece: most bodies arrive in large slices. */
  private codes: Uint16Array | null = null;
  private used = 0;

  /** One character: the 1-byte-delta case, without a string to walk. */
  appendCode(code: number): void {
    const codes = (this.codes ??= new Uint16Array(BLOCK));
    if (this.used === BLOCK) this.flushCodes();
    codes[this.used++] = code;
  }

  append(piece: string): void {
    const n = piece.length;
    if (n > 8) {
      if (this.used > 0) this.flushCodes();
      this.batch.push(piece);
      if (this.batch.length >= BATCH) this.flushBatch();
      return;
    }
    const codes = (this.codes ??= new Uint16Array(BLOCK));
    if (this.used + n > BLOCK) this.flushCodes();
    for (let i = 0; i < n; i++) codes[this.used++] = piece.charCodeAt(i);
  }

  toString(): string {
    if (this.used > 0) this.flushCodes();
    if (this.batch.length > 0) this.flushBatch();
    return this.text;
  }

  private flushCodes(): void {
    this.batch.push(String.fromCharCode.apply(null, this.codes!.subarray(0, this.used) as unknown as number[]));
    this.used = 0;
    if (this.batch.length >= BATCH) this.flushBatch();
  }

  private flushBatch(): void {
    this.text += this.batch.join('');
    this.batch = [];
  }
}
