import type { WireError } from './errors.ts';

// The frames of a call's pipes: one type byte, then the payload. A call's
// `down` pipe starts with `A` (an upload, at once) and/or `H`; a body follows
// as `D`s up to `E`, or `X` when it failed midway. Its `up` pipe (uploads)
// is `D`s, then `E`, or `X` when the caller's body failed.

/** The call as it waits in the calls list (JSON). */
export type CallRequest = {
  id: string;
  sid: string;
  op: string;
  args: unknown[];
  /** the caller's mailbox (keys.ts sandboxCallKeys: mailbox) */
  mailbox: string;
  /** ms since the epoch after which the caller has given up on a pickup */
  pickupBy: number;
};

/**
 * The answer's head. `value`: the answer, or its part without the bytes;
 * `body`: what follows as `D` frames: `json` (the value too large for one
 * frame), `bytes` (a file's contents, put back into `value.bytes`), `stream`
 * (handed on as a stream). `mailbox`: the worker's, for credits and cancels.
 */
export type AnswerHead = { mailbox: string; value?: unknown; body?: 'json' | 'bytes' | 'stream' };

export type Frame =
  | { t: 'A'; mailbox: string }
  | { t: 'H'; head: AnswerHead }
  | { t: 'D'; data: Buffer }
  | { t: 'E' }
  | { t: 'X'; error: WireError };

const json = (t: string, v: unknown) => Buffer.concat([Buffer.from(t), Buffer.from(JSON.stringify(v))]);

export function encodeFrame(f: Frame): Buffer {
  switch (f.t) {
    case 'A': return json('A', { mailbox: f.mailbox });
    case 'H': return json('H', f.head);
    case 'D': return Buffer.concat([Buffer.from('D'), f.data]);
    case 'E': return Buffer.from('E');
    case 'X': return json('X', f.error);
  }
}

export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FrameError';
  }
}

export function decodeFrame(b: Buffer): Frame {
  const t = String.fromCharCode(b[0] ?? 0);
  const rest = () => JSON.parse(b.subarray(1).toString('utf8')) as Record<string, unknown>;
  switch (t) {
    case 'A': return { t, mailbox: String(rest().mailbox) };
    case 'H': return { t, head: rest() as AnswerHead };
    case 'D': return { t, data: b.subarray(1) };
    case 'E': return { t };
    case 'X': return { t, error: rest() as WireError };
    default: throw new FrameError(`unknown frame type ${JSON.stringify(t)} (${b.length} bytes)`);
  }
}

/** Cuts a buffer into frame-sized pieces (no copy). */
export function* slices(data: Buffer, frameBytes: number): Generator<Buffer> {
  for (let at = 0; at < data.length; at += frameBytes) yield data.subarray(at, at + frameBytes);
}
