// How the model hears that an operator edited its command before approving
// it (`approve_edited`, API.md additions 2026-12-01): the record's own fields
// hold what ran, `edited_from` what the model asked for. Without this the
// model would believe its own command ran and plan on a wrong premise. Pure.

/** The edited record fields this needs; a structural subset of the pipeline's LedgerRecord. */
export interface EditedFields {
  cmd: string | null;
  path: string | null;
  content?: string | null;
  content_size?: number | null;
  content_truncated?: boolean;
  edited_from?: { cmd: string | null; content: string | null; content_size: number | null } | null;
}

/** Content shown back to the model: enough to see the operator's change, never a whole large file. */
const SHOWN = 4 * 1024;

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The ledger line's part for an edited record (`edited=operator asked="…"`), null when it was not edited. */
export function editedPart(r: EditedFields): string | null {
  const from = r.edited_from;
  if (!from) return null;
  // A script's edit is its cmd; a body's edit is its content (edited_from keeps whichever the command had).
  const asked = from.cmd !== null ? oneLine(from.cmd) : `${from.content_size ?? 0} bytes of content`;
  return `edited=operator asked=${JSON.stringify(clip(asked, 200))}`;
}

/** The lines of a [THINKFLOW RESULT] / [THINKFLOW ERROR] block that say what the operator changed; none when nothing was. */
export function editNote(r: EditedFields): string[] {
  const from = r.edited_from;
  if (!from) return [];
  if (from.cmd !== null) {
    return [
      'The operator edited this command before approving it; the edited command is what ran.',
      `You asked for: ${from.cmd ?? ''}`,
      `What ran: ${r.cmd ?? ''}`,
    ];
  }
  const content = r.content ?? '';
  const cut = content.length > SHOWN || r.content_truncated;
  return [
    `The operator edited the content before approving it; the edited content is what was written to ${r.path ?? 'the file'}.`,
    `You asked to write ${from.content_size ?? 0} bytes; what was written (${r.content_size ?? content.length} bytes)${cut ? ', first part' : ''}:`,
    content.length > SHOWN ? `${content.slice(0, SHOWN)}\n…` : content,
  ];
}
