// Types of bounded-diff.mjs (plain JavaScript so a worker thread can load it).
export type DiffLine = { op: ' ' | '-' | '+'; text: string };
export type TextFacts = { bytes: number; lines: number; sha256: string };
export type DiffLimits = { maxBytes: number; maxLines: number; timeoutMs: number };
export type BoundedDiff = {
  diff: DiffLine[] | null;
  diff_truncated: boolean;
  /** why there is no diff (sizes and sha256 of both sides), null when there is one */
  diff_note: string | null;
  edit_sides: { old: TextFacts; new: TextFacts };
};
export type BaseSummary = {
  id: string; tool: string; path: string | null; dest: string | null; cmd: string | null;
  content: string | null; content_size: number | null; policy_reason: string | null;
  old_text: string | null; new_text: string | null; text_truncated: boolean;
  edit: BoundedDiff | null;
};
export function textFacts(text: string): TextFacts;
export function boundedLineDiff(oldText: string, newText: string, limits: DiffLimits): BoundedDiff;
export function capText(s: string | null | undefined, max: number): { text: string | null; truncated: boolean };
export function summarizeBase(baseJson: string, limits: DiffLimits, withDiff: boolean, commandJson?: string): BaseSummary;
