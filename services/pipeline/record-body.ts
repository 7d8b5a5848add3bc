import { createHash } from 'node:crypto';

// How much of a command's bodies (write/append content, edit texts) a ledger
// record or an event keeps: at most THINKFLOW_RECORD_BODY_BYTES for the whole
// command, with each body's full size and SHA-256, so the record still proves
// what ran. Redis never needs the bytes: the workspace has them. Pure.

export const BODY_FIELDS = ['content', 'old_text', 'new_text'] as const;
export type BodyField = (typeof BODY_FIELDS)[number];

/** A body as stored: its first bytes (cut at a UTF-8 character boundary), full size and digest. */
export type StoredBody = { text: string; size: number; sha256: string; truncated: boolean };

/** The stored body of `s` keeping at most `maxBytes` UTF-8 bytes of it. */
export function storeBody(s: string, maxBytes: number): StoredBody {
  const buf = Buffer.from(s, 'utf8');
  const sha256 = createHash('sha256').update(buf).digest('hex');
  if (buf.length <= maxBytes) return { text: s, size: buf.length, sha256, truncated: false };
  let end = Math.max(0, maxBytes);
  // buf[end] is the first byte left out: while it continues a character, that character is left out whole.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), size: buf.length, sha256, truncated: true };
}

/**
 * Splits `max` bytes between bodies of the given sizes, fairly: the smaller
 * ones are kept whole when they fit their share, the rest share what is left.
 * The budgets never add up to more than `max`.
 */
export function shareBudget(sizes: number[], max: number): number[] {
  const order = sizes.map((size, i) => ({ size, i })).sort((a, b) => a.size - b.size);
  const out = new Array<number>(sizes.length).fill(0);
  let left = max;
  order.forEach(({ size, i }, k) => {
    out[i] = Math.min(size, Math.floor(left / (order.length - k)));
    left -= out[i]!;
  });
  return out;
}

/** The record fields of one body: `<f>`, `<f>_size`, `<f>_sha256`, `<f>_truncated`. */
export type BodyRecordFields = {
  content: string | null; content_size: number | null; content_sha256: string | null; content_truncated: boolean;
  old_text: string | null; old_text_size: number | null; old_text_sha256: string | null; old_text_truncated: boolean;
  new_text: string | null; new_text_size: number | null; new_text_sha256: string | null; new_text_truncated: boolean;
};

/** The bodies of a command as a record keeps them: absent ones are null (and not truncated). */
export function boundBodies(c: Partial<Record<BodyField, string | undefined>>, maxBytes: number): BodyRecordFields {
  const present = BODY_FIELDS.filter((f) => c[f] !== undefined);
  const budgets = shareBudget(present.map((f) => Buffer.byteLength(c[f]!, 'utf8')), maxBytes);
  // One literal shape, filled by constant names: objects built from computed keys took V8's dictionary mode, and
  // every spread, copy and JSON.stringify of the record built on them ran slower (once per command).
  const out: BodyRecordFields = {
    content: null, content_size: null, content_sha256: null, content_truncated: false,
    old_text: null, old_text_size: null, old_text_sha256: null, old_text_truncated: false,
    new_text: null, new_text_size: null, new_text_sha256: null, new_text_truncated: false,
  };
  present.forEach((f, i) => setBody(out, f, storeBody(c[f]!, budgets[i]!)));
  return out;
}

function setBody(out: BodyRecordFields, f: BodyField, b: StoredBody): void {
  if (f === 'content') {
    out.content = b.text; out.content_size = b.size; out.content_sha256 = b.sha256; out.content_truncated = b.truncated;
  } else if (f === 'old_text') {
    out.old_text = b.text; out.old_text_size = b.size; out.old_text_sha256 = b.sha256; out.old_text_truncated = b.truncated;
  } else {
    out.new_text = b.text; out.new_text_size = b.size; out.new_text_sha256 = b.sha256; out.new_text_truncated = b.truncated;
  }
}

/** A command as an event carries it: bodies cut like a record's, with size, digest and flag for each body present. */
export function boundCommand<C extends Partial<Record<BodyField, string | undefined>>>(c: C, maxBytes: number): C {
  const bodies = boundBodies(c, maxBytes);
  const out: Record<string, unknown> = { ...c };
  for (const f of BODY_FIELDS) {
    if (c[f] === undefined) continue;
    Object.assign(out, { [f]: bodies[f], [`${f}_size`]: bodies[`${f}_size`], [`${f}_sha256`]: bodies[`${f}_sha256`], [`${f}_truncated`]: bodies[`${f}_truncated`] });
  }
  return out as C;
}

/** True when a record keeps less than the command's bodies (the full command must then be dropped once final). */
export function hasCutBody(r: Partial<Pick<BodyRecordFields, 'content_truncated' | 'old_text_truncated' | 'new_text_truncated'>>): boolean {
  return Boolean(r.content_truncated || r.old_text_truncated || r.new_text_truncated);
}
