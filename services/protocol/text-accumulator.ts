// Appends many small strings cheaply. With 1-byte deltas, `s += piece` builds
// one rope node per character; collecting char codes and flushing them in
// blocks keeps the 1-byte-delta path fast and the memory flat.
const BLOCK = 4096;

export class TextAccumulator {
  private text = '';
  /** Allocated on the first small piece: most bodies arrive in large slices. */
  private codes: Uint16Array | null = null;
  private used = 0;

  append(piece: string): void {
    const n = piece.length;
    if (n > 8) {
      if (this.used > 0) this.flush();
      this.text += piece;
      return;
    }
    const codes = (this.codes ??= new Uint16Array(BLOCK));
    if (this.used + n > BLOCK) this.flush();
    for (let i = 0; i < n; i++) codes[this.used++] = piece.charCodeAt(i);
  }

  get length(): number {
    return this.text.length + this.used;
  }

  toString(): string {
    if (this.used > 0) this.flush();
    return this.text;
  }

  private flush(): void {
    this.text += String.fromCharCode.apply(null, this.codes!.subarray(0, this.used) as unknown as number[]);
    this.used = 0;
  }
}
