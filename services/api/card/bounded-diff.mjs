// The approval card's line diff and record summary, bounded in size and time.
// Plain JavaScript on purpose: the worker thread that runs it for large
// records (view-worker.mjs) loads it without a TypeScript loader. Types:
// bounded-diff.d.mts.
import { createHash } from 'node:crypto';
import { diffLines } from 'diff';

/** @param {string} text */
export function textFacts(text) {
  let lines = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  if (text !== '' && !text.endsWith('\n')) lines++;
  return { bytes: Buffer.byteLength(text), lines, sha256: createHash('sha256').update(text).digest('hex') };
}

const side = (name, f) => `${name} ${f.bytes} bytes, ${f.lines} lines, sha256 ${f.sha256}`;

/**
 * old → new as whole lines (jsdiff), each marked kept, removed or added; or no
 * diff, with a note, when a side is over `maxBytes` or `maxLines`, or jsdiff
 * gives up after `timeoutMs` (its own `timeout` option). Sizes and hashes of
 * both sides always, so a person can still tell what is being replaced.
 */
export function boundedLineDiff(oldText, newText, limits) {
  const sides = { old: textFacts(oldText), new: textFacts(newText) };
  const over = [sides.old, sides.new].some((f) => f.bytes > limits.maxBytes || f.lines > limits.maxLines);
  if (over) {
    const note = `content too large to diff (limit ${limits.maxBytes} bytes or ${limits.maxLines} lines a side): ${side('old', sides.old)}; ${side('new', sides.new)}`;
    return { diff: null, diff_truncated: true, diff_note: note, edit_sides: sides };
  }
  const parts = diffLines(oldText, newText, { timeout: limits.timeoutMs });
  if (!parts) {
    const note = `too many changes to diff within ${limits.timeoutMs} ms: ${side('old', sides.old)}; ${side('new', sides.new)}`;
    return { diff: null, diff_truncated: true, diff_note: note, edit_sides: sides };
  }
  const diff = [];
  for (const part of parts) {
    const op = part.added ? '+' : part.removed ? '-' : ' ';
    const lines = part.value.endsWith('\n') ? part.value.slice(0, -1).split('\n') : part.value.split('\n');
    for (const text of lines) diff.push({ op, text });
  }
  return { diff, diff_truncated: false, diff_note: null, edit_sides: sides };
}

/** The first `max` UTF-16 units of `s`, never splitting a surrogate pair. */
export function capText(s, max) {
  if (s === null || s === undefined) return { text: null, truncated: false };
  if (s.length <= max) return { text: s, truncated: false };
  const end = /[\uD800-\uDBFF]/.test(s[max - 1] ?? '') ? max - 1 : max;
  return { text: s.slice(0, end), truncated: true };
}

/**
 * A ledger record's stored base (its JSON), with the full command's JSON
 * when the record cut its bodies → what the card shows of it:
 * the command's small fields, the edit's texts capped at `maxBytes` units,
 * and (with `withDiff`) the bounded diff. Nothing large comes back.
 */
export function summarizeBase(baseJson, limits, withDiff, commandJson) {
  const b = JSON.parse(baseJson);
  // The record keeps at most THINKFLOW_RECORD_BODY_BYTES of the bodies; while
  // the command waits, its full text is there too, and the operator decides on that.
  if (commandJson) {
    const c = JSON.parse(commandJson);
    for (const f of ['content', 'old_text', 'new_text']) if (typeof c[f] === 'string') b[f] = c[f];
  }
  const oldCap = capText(b.old_text, limits.maxBytes);
  const newCap = capText(b.new_text, limits.maxBytes);
  // withDiff: the caller's word that the tool's body is an edit (protocol/tools.ts).
  const edit = withDiff ? boundedLineDiff(b.old_text ?? '', b.new_text ?? '', limits) : null;
  return {
    id: b.id, tool: b.tool, path: b.path ?? null, dest: b.dest ?? null, cmd: b.cmd ?? null,
    content: b.content ?? null, content_size: b.content_size ?? null, policy_reason: b.policy_reason ?? null,
    old_text: oldCap.text, new_text: newCap.text, text_truncated: oldCap.truncated || newCap.truncated,
    edit,
  };
}
