// Streaming check of an edit body: `<old>…</old>` then `<new>…</new>`, only
// whitespace around them (PROTOCOL.md §2, §7). Fed piece by piece, so an
// oversized body is still judged without being kept in memory.

const enum Phase {
  BeforeOld,
  OldOpen,
  OldLeadingBreak,
  OldText,
  BetweenParts,
  NewOpen,
  NewLeadingBreak,
  NewText,
  After,
  Broken,
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

export class EditBodyReader {
  #phase = Phase.BeforeOld;
  /** How much of the literal we are matching (`<old>`, `</old>`, …) has been seen. */
  #matched = 0;
  /** A `\r` right after `<old>`/`<new>` that may be half of a dropped `\r\n`. */
  #pendingCr = false;
  #oldText = '';
  #newText = '';
  #oldEmpty = true;
  /** Stop keeping text once the body is known to be over the limit. */
  keepText = true;

  push(chunk: string): void {
    let i = 0;
    const n = chunk.length;
    while (i < n && this.#phase !== Phase.Broken) {
      switch (this.#phase) {
        case Phase.BeforeOld:
        case Phase.BetweenParts:
        case Phase.After: {
          const code = chunk.charCodeAt(i);
          if (isBlank(code)) { i++; break; }
          if (code === 0x3c /* < */ && this.#phase !== Phase.After) {
            this.#phase = this.#phase === Phase.BeforeOld ? Phase.OldOpen : Phase.NewOpen;
            this.#matched = 1;
            i++;
            break;
          }
          this.#phase = Phase.Broken;
          break;
        }
        case Phase.OldOpen:
        case Phase.NewOpen: {
          const literal = this.#phase === Phase.OldOpen ? '<old>' : '<new>';
          if (chunk[i] !== literal[this.#matched]) { this.#phase = Phase.Broken; break; }
          i++;
          if (++this.#matched === literal.length) {
            this.#matched = 0;
            this.#phase = this.#phase === Phase.OldOpen ? Phase.OldLeadingBreak : Phase.NewLeadingBreak;
          }
          break;
        }
        case Phase.OldLeadingBreak:
        case Phase.NewLeadingBreak: {
          const textPhase = this.#phase === Phase.OldLeadingBreak ? Phase.OldText : Phase.NewText;
          const code = chunk.charCodeAt(i);
          if (this.#pendingCr) {
            this.#pendingCr = false;
            if (code === 0x0a) i++;
            else this.#text(textPhase, '\r');
            this.#phase = textPhase;
          } else if (code === 0x0d) { this.#pendingCr = true; i++; }
          else { if (code === 0x0a) i++; this.#phase = textPhase; }
          break;
        }
        case Phase.OldText:
        case Phase.NewText:
          i = this.#scanText(chunk, i);
          break;
      }
    }
  }

  /** Consumes part text up to and including its closing literal; returns the new index. */
  #scanText(chunk: string, i: number): number {
    const textPhase = this.#phase;
    const literal = textPhase === Phase.OldText ? '</old>' : '</new>';
    const n = chunk.length;
    while (i < n) {
      if (this.#matched === 0) {
        const lt = chunk.indexOf('<', i);
        if (lt < 0) { this.#text(textPhase, chunk.slice(i)); return n; }
        if (lt > i) this.#text(textPhase, chunk.slice(i, lt));
        this.#matched = 1;
        i = lt + 1;
        continue;
      }
      if (chunk[i] === literal[this.#matched]) {
        i++;
        if (++this.#matched === literal.length) {
          this.#matched = 0;
          this.#phase = textPhase === Phase.OldText ? Phase.BetweenParts : Phase.After;
          return i;
        }
        continue;
      }
      // The held prefix was text after all; the current char is looked at again.
      this.#text(textPhase, literal.slice(0, this.#matched));
      this.#matched = 0;
    }
    return i;
  }

  #text(phase: Phase, text: string): void {
    if (text.length === 0) return;
    if (phase === Phase.OldText) {
      this.#oldEmpty = false;
      if (this.keepText) this.#oldText += text;
    } else if (this.keepText) this.#newText += text;
  }

  /** The parts when the whole body was well formed, else null (`bad_edit`). */
  finish(): { oldText: string; newText: string } | null {
    if (this.#phase !== Phase.After || this.#oldEmpty) return null;
    return { oldText: this.#oldText, newText: this.#newText };
  }
}
