import type { BashExplanation } from '../../policy/index.ts';
import type { IndirectFile, PolicyGate, SessionMeta } from '../../pipeline/index.ts';

// A shell script's lines as the card shows them (API.md, additions
// 2026-12-01, `indirect`): each line that runs something, split into its
// simple commands with the decision each would get — the same explanation
// the card gives a bash command (explainBash), without grants, so the card
// says what would stop if the script's lines were commands of their own.
// The script does not run through the policy line by line (bash runs it
// whole): this is for the person deciding, bounded like the rest of a card.

export type ScriptLine = { line: number; text: string; bash: BashExplanation };
export type ScriptLines = { lines: ScriptLine[]; /** more lines ran than are explained (MAX_LINES, MAX_LINE_CHARS) */ truncated: boolean };

/** Lines explained per script, and the longest line explained (a longer one is counted, not judged). */
export const MAX_LINES = 200;
export const MAX_LINE_CHARS = 2000;
const HEREDOC = /<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/;

/** Null for a file that is not a shell script (python3, node). An npm script is one shell line. */
export function scriptLines(gate: Pick<PolicyGate, 'explainBash'>, session: SessionMeta, file: IndirectFile): ScriptLines | null {
  if (file.runner === 'python3' || file.runner === 'node') return null;
  const out: ScriptLine[] = [];
  let truncated = file.truncated;
  for (const { line, text } of commandLines(file.content)) {
    if (out.length === MAX_LINES || text.length > MAX_LINE_CHARS) {
      truncated = true;
      if (out.length === MAX_LINES) break;
      continue;
    }
    out.push({ line, text, bash: gate.explainBash(session, text, []) });
  }
  return { lines: out, truncated };
}

/**
 * The lines that run something, 1-based: blank lines, comments and the
 * shebang left out, a line ending in `\` joined to the next, a here-document's
 * body skipped (it is data, shown with the file).
 */
export function* commandLines(content: string): Generator<{ line: number; text: string }> {
  const lines = content.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i]!.replace(/\r$/, '');
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!.replace(/\r$/, '')}`;
    const trimmed = text.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    yield { line: start + 1, text: trimmed };
    const doc = HEREDOC.exec(trimmed);
    if (!doc) continue;
    const end = doc[3]!;
    while (i + 1 < lines.length && (doc[1] ? lines[i + 1]!.replace(/^\t+/, '') : lines[i + 1]!).replace(/\r$/, '') !== end) i++;
    i++; // the delimiter line
  }
}
