// The feedback builder (PROTOCOL.md §5): turns ledger records and parse errors
// into the [THINKFLOW …] blocks the model reads on its next call. Pure.
import { targetOf, toolOf, type ParseError, type ToolName } from '../protocol/index.ts';
import type { LedgerStatus } from '../pipeline/index.ts';
import { editedPart, editNote, type EditedFields } from './edit-note.ts';


/** The ledger fields feedback needs; a structural subset of the pipeline's LedgerRecord. */
export interface FeedbackRecord extends Omit<EditedFields, 'cmd' | 'path'> {
  id: string;
  tool: ToolName;
  path: string | null;
  dest: string | null;
  cmd: string | null;
  status: LedgerStatus;
  bytes_written: number | null;
  exit_code: number | null;
  error: string | null;
  stdout: string | null;
  stderr: string | null;
  stdout_truncated?: boolean;
  stderr_truncated?: boolean;
  /** The approval the command waited on, if any: an expired one is told as unanswered. */
  approval?: { decision: string | null; requested_at: string; expires_at: string } | null;
}

const SHORT_ERROR = 160;
const RESULT_OUTPUT = 16 * 1024;

function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

/** How long an approval waited, as a person would say it: "15 min", "90 s". */
function waited(approval: NonNullable<FeedbackRecord['approval']>): string {
  const s = Math.max(0, Math.round((Date.parse(approval.expires_at) - Date.parse(approval.requested_at)) / 1000));
  return s < 120 && s % 60 !== 0 ? `${s} s` : `${Math.round(s / 60)} min`;
}

/**
 * An approval that expired is recorded `rejected` (POLICY.md §5), but nobody
 * refused anything: the model hears that no operator answered in time, so it
 * does not take it for a person's verdict on the command. Null otherwise.
 */
export function unansweredApproval(r: FeedbackRecord): string | null {
  if (r.status !== 'rejected' || r.approval?.decision !== 'expired') return null;
  return `not run: no operator answered within ${waited(r.approval)} (the approval request expired unanswered; nobody refused it)`;
}

/** One line per record: id, tool, target, status, bytes, exit code, short error. */
export function renderLedger(records: readonly FeedbackRecord[]): string {
  const lines = records.map((r) => {
    const parts = [`id=${r.id}`, `tool=${r.tool}`, `target=${JSON.stringify(clip(targetOf(r), 200))}`, `status=${r.status}`];
    const unanswered = unansweredApproval(r);
    if (unanswered) parts.push('approval=unanswered');
    const edited = editedPart(r);
    if (edited) parts.push(edited);
    if (r.bytes_written !== null) parts.push(`bytes=${r.bytes_written}`);
    if (r.exit_code !== null) parts.push(`exit=${r.exit_code}`);
    const error = unanswered ?? r.error;
    if (error) parts.push(`error=${JSON.stringify(clip(error, SHORT_ERROR))}`);
    return `- ${parts.join(' ')}`;
  });
  return ['[THINKFLOW COMMAND LEDGER]', ...lines, '[/THINKFLOW COMMAND LEDGER]'].join('\n');
}

export type Interruption =
  | { kind: 'failure'; record: FeedbackRecord; skipped: string[] }
  | { kind: 'parse_error'; stream: string; error: ParseError; skipped: string[] }
  | { kind: 'result'; record: FeedbackRecord }
  /** The model's stream broke off mid-turn (turn-runner.ts): the model is asked to go on once. */
  | { kind: 'stream_broken'; error: string };

function output(label: string, text: string | null, truncated?: boolean): string[] {
  if (!text) return [];
  const body = text.length > RESULT_OUTPUT ? `${text.slice(0, RESULT_OUTPUT)}\n… (${text.length - RESULT_OUTPUT} more characters not shown)` : text;
  return [`${label}${truncated ? ' (truncated by the sandbox)' : ''}:`, body];
}

export function renderInterruption(i: Interruption): string {
  if (i.kind === 'result') {
    const r = i.record;
    return [
      '[THINKFLOW RESULT]',
      `Command ${r.id} (${r.tool} ${targetOf(r)}) ${r.status}${r.exit_code !== null ? ` with exit code ${r.exit_code}` : ''}.`,
      ...editNote(r),
      ...output(toolOf(r.tool).outputLabel ?? 'stdout', r.stdout, r.stdout_truncated),
      ...output('stderr', r.stderr, r.stderr_truncated),
      ...(r.error ? [`error: ${r.error}`] : []),
      'Continue with new ids.',
      '[/THINKFLOW RESULT]',
    ].join('\n');
  }
  if (i.kind === 'stream_broken') {
    return [
      '[THINKFLOW ERROR]',
      `Your previous response was cut off: the model stream broke (${i.error}).`,
      'The commands you had completed before the cut ran; their results are in the ledger above. A command whose closing tag had not arrived did not run.',
      'Continue from where you stopped with new ids; do not repeat commands that succeeded.',
      '[/THINKFLOW ERROR]',
    ].join('\n');
  }
  const skipped = i.skipped.length > 0 ? `Skipped, not executed: ${i.skipped.join(', ')}.` : 'No later command of this turn was skipped.';
  if (i.kind === 'parse_error') {
    return [
      '[THINKFLOW ERROR]',
      `Parse error in the ${i.stream} stream${i.error.id ? ` (id ${i.error.id})` : ''}: ${i.error.code}: ${i.error.message}.`,
      skipped,
      'Fix the tag format and continue; do not reuse ids of failed or skipped commands.',
      '[/THINKFLOW ERROR]',
    ].join('\n');
  }
  const r = i.record;
  const unanswered = unansweredApproval(r);
  const what = unanswered ? `was ${unanswered}` : `${r.status}: ${r.error ?? 'no error message'}${r.exit_code !== null ? ` (exit code ${r.exit_code})` : ''}`;
  return [
    '[THINKFLOW ERROR]',
    `Command ${r.id} (${r.tool} ${targetOf(r)}) ${what}.`,
    ...editNote(r),
    ...output('stdout', r.stdout, r.stdout_truncated),
    ...output('stderr', r.stderr, r.stderr_truncated),
    skipped,
    'Re-plan the remaining work with new ids; ids of failed or skipped commands may not be reused.',
    '[/THINKFLOW ERROR]',
  ].join('\n');
}

/** The one user message a model call after the first receives (API.md, feedback messages). */
export function feedbackMessage(uninjected: readonly FeedbackRecord[], interruption: Interruption | null): string | null {
  const blocks: string[] = [];
  if (uninjected.length > 0) blocks.push(renderLedger(uninjected));
  if (interruption) blocks.push(renderInterruption(interruption));
  return blocks.length > 0 ? blocks.join('\n\n') : null;
}
