// The event-stream parser of the HTML spec, for the client commands that
// follow a job's Server-Sent Events (api-client.ts reconnects around it).

export type SseEvent = { id: string; event: string; data: string };

/**
 * The event-stream parser of the HTML spec (§9.2.6): lines end in CRLF, LF or
 * CR (a CRLF may be split across chunks), `:` starts a comment, one space
 * after the colon is dropped, `data` lines join with LF, a blank line
 * dispatches, and an unterminated event at the end of the stream is dropped.
 */
export class SseParser {
  /** The id of the last dispatched event: what a reconnection sends as Last-Event-ID. */
  lastEventId: string;
  retryMs: number | null = null;
  /** An `id:` line takes effect only when its event is dispatched, so a torn event cannot move it. */
  #idBuffer: string;
  #buf = '';
  #afterCR = false;
  #started = false;
  #event = '';
  #data: string[] = [];

  constructor(lastEventId = '') {
    this.lastEventId = lastEventId;
    this.#idBuffer = lastEventId;
  }

  feed(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let s = text;
    if (!this.#started && s.length > 0) {
      this.#started = true;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    if (this.#afterCR && s.length > 0) {
      if (s[0] === '\n') s = s.slice(1);
      this.#afterCR = false;
    }
    const buf = this.#buf + s;
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const ch = buf[i];
      if (ch !== '\r' && ch !== '\n') continue;
      this.#line(buf.slice(start, i), out);
      if (ch === '\r') {
        if (i + 1 === buf.length) this.#afterCR = true;
        else if (buf[i + 1] === '\n') i++;
      }
      start = i + 1;
    }
    this.#buf = buf.slice(start);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      this.lastEventId = this.#idBuffer;
      if (this.#data.length > 0) out.push({ id: this.lastEventId, event: this.#event || 'message', data: this.#data.join('\n') });
      this.#data = [];
      this.#event = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id') { if (!value.includes('\0')) this.#idBuffer = value; }
    else if (field === 'retry') { if (/^\d+$/.test(value)) this.retryMs = Number(value); }
  }
}
