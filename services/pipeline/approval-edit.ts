import type { Grant } from '../policy/index.ts';
import { DEFAULT_BODY_LIMIT, isToolName, OPENING_TAG_LIMIT, targetOf, toolOf, type Command } from '../protocol/index.ts';
import type { AnswerOutcome, Approvals } from './approvals.ts';
import { PipelineError } from './errors.ts';
import { decidingRule, editedBase, type LedgerBase } from './ledger-record.ts';
import type { Pipeline } from './pipeline.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { SessionMeta } from './sessions.ts';

// `approve_edited` (API.md, additions 2026-12-01): the operator changes a
// pending command (bash `cmd`, write/append `content`) and approves that
// instead. The edit is held to the limits of a command from the model and
// judged by the policy like one: a `forbid` refuses it (the approval stays
// pending), a `prompt` runs, since a person approved exactly this command.
// The answer script writes the edited command into the ledger record in the
// same step as the answer, so any worker that sees the answer runs the edit.

/**
 * What an operator may change of a tool's command, from its descriptor: a script's `cmd` (bash), a body of
 * `content` (write, append); null for any other tool (its paths are what the approval was asked about).
 */
export function editableField(tool: string): 'cmd' | 'content' | null {
  if (!isToolName(tool)) return null;
  const t = toolOf(tool);
  return t.judged === 'script' ? 'cmd' : t.body === 'content' ? 'content' : null;
}

export type ApprovalEdit = { cmd?: string | undefined; content?: string | undefined };

export type EditPorts = {
  approvals: Pick<Approvals, 'get' | 'answer'>;
  gate: Pick<PolicyGate, 'evaluate'>;
  records: { rawBase(sid: string, index: number): Promise<Buffer | null>; rawCommand(sid: string, index: number): Promise<Buffer | null>; grants(sid: string): Promise<Grant[]> };
  session(sid: string): Promise<SessionMeta>;
  /** THINKFLOW_RECORD_BODY_BYTES: the bodies a record keeps */
  bodyBytes: number;
  /** THINKFLOW_MAX_TAG_BODY_BYTES: the largest body a command from the model may carry */
  maxBodyBytes?: number;
};

/** The pipeline's parts an edit reads (Pipeline's public getters). */
export type EditSource = Pick<Pipeline, 'approvals' | 'gate' | 'records' | 'session' | 'bodyBytes' | 'parserOptions'>;

/** The ports of answerEdited from the pipeline: the record, the session's policy and grants, a command's limits. */
export function editPortsOf(p: EditSource): EditPorts {
  return {
    approvals: p.approvals, gate: p.gate, records: p.records, session: (sid) => p.session(sid),
    bodyBytes: p.bodyBytes, ...(p.parserOptions.maxBodyBytes !== undefined ? { maxBodyBytes: p.parserOptions.maxBodyBytes } : {}),
  };
}

const invalid = (field: string, message: string) => new PipelineError('invalid_body', message, { field });

/**
 * Throws `invalid_body` naming the field when the edit does not fit the tool
 * (a `cmd` for a non-bash command, a `content` for a tool other than write or
 * append, both, or neither) or is over a command's limits. Pure.
 */
export function checkEdit(tool: string, edit: ApprovalEdit, maxBodyBytes = DEFAULT_BODY_LIMIT): void {
  const field = editableField(tool);
  if (edit.cmd !== undefined && edit.content !== undefined) throw invalid(field === 'cmd' ? 'content' : 'cmd', 'approve_edited takes either cmd (bash) or content (write, append), not both');
  if (!field) {
    const given = edit.cmd !== undefined ? 'cmd' : 'content';
    throw invalid(given, `a ${tool} command cannot be edited: approve_edited takes cmd for bash and content for write or append`);
  }
  const other = field === 'cmd' ? 'content' : 'cmd';
  if (edit[other] !== undefined) throw invalid(other, `${other} does not apply to a ${tool} command: send ${field}`);
  const value = edit[field];
  if (value === undefined) throw invalid(field, `approve_edited of a ${tool} command needs ${field}: the edited ${field === 'cmd' ? 'command' : 'content'}`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (field === 'cmd' && value.trim() === '') throw invalid('cmd', 'cmd is empty: send the command to run');
  if (field === 'cmd' && /\0/.test(value)) throw invalid('cmd', 'cmd holds a NUL character');
  const max = field === 'cmd' ? OPENING_TAG_LIMIT : maxBodyBytes;
  if (bytes > max) throw invalid(field, `${field} is ${bytes} bytes, over the ${max}-byte limit of a command from the model`);
}

/** The command the operator asked for instead of `original`. */
export function editedCommand(original: Command, edit: ApprovalEdit): Command {
  if (editableField(original.tool) === 'cmd') return { ...original, cmd: edit.cmd! };
  // An operator's empty content is stated outright, as a native call's is (allow_empty).
  return { ...original, content: edit.content!, ...(edit.content === '' ? { allow_empty: true } : {}) };
}

/**
 * Answers `token` with `approve_edited`. Unknown or closed approvals report
 * so (the route's 404 / 409); a bad edit throws `invalid_body`, a forbidden
 * one `edit_forbidden` naming the rule, and the approval stays pending.
 */
export async function answerEdited(p: EditPorts, token: string, edit: ApprovalEdit, reason: string | null, decidedBy: string): Promise<AnswerOutcome> {
  const state = await p.approvals.get(token);
  if (!state) return 'unknown';
  if (state.status !== 'pending') return state.status === 'expired' ? 'expired' : 'answered';
  checkEdit(state.tool, edit, p.maxBodyBytes);
  const sid = state.session_id;
  const [rawBase, rawCommand, session, grants] = await Promise.all([
    p.records.rawBase(sid, state.index), p.records.rawCommand(sid, state.index), p.session(sid), p.records.grants(sid),
  ]);
  // The record no longer holds a command to run (it ended meanwhile): the approval is as good as closed.
  if (!rawBase || !rawCommand) return 'answered';
  const original = JSON.parse(rawCommand.toString('utf8')) as Command;
  const edited = editedCommand(original, edit);
  const evaluation = p.gate.evaluate(session, edited, grants);
  if (evaluation.decision === 'forbid') throw forbidden(edited, evaluation);
  const base = editedBase(JSON.parse(rawBase.toString('utf8')) as LedgerBase, edited, evaluation, p.bodyBytes);
  return p.approvals.answer(token, 'approve_edited', reason, decidedBy, 'exact', {
    index: state.index, base: JSON.stringify(base), command: JSON.stringify(edited),
  });
}

function forbidden(edited: Command, ev: ReturnType<EditPorts['gate']['evaluate']>): PipelineError {
  const rule = decidingRule(ev);
  const matched = ev.matched_rules.find((r) => r.id === rule);
  const by = matched ? `rule ${matched.id} (${matched.layer} layer)${matched.justification ? `: ${matched.justification}` : ''}` : ev.reason || 'the policy';
  return new PipelineError('edit_forbidden', `the edited command ${JSON.stringify(targetOf(edited))} is forbidden by ${by}; the approval is still pending`, {
    rule, reason: ev.reason || null, matched_rules: ev.matched_rules,
  });
}
