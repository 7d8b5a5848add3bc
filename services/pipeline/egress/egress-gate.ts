import type { Evaluation } from '../../policy/index.ts';
import { showHostPort } from '../../policy/index.ts';
import { reasonOf, withIds } from '../../log/index.ts';
import { ApprovalWaitAborted, ledgerApproval, publicOf, type Approvals, type ApprovalState } from '../approvals.ts';
import type { EventWriter } from '../event-writer.ts';
import type { Ledger } from '../ledger.ts';
import type { PolicyGate } from '../policy-gate.ts';
import type { SessionMeta, Sessions } from '../sessions.ts';
import type { NetworkLog } from './network-log.ts';
import type { NetworkRecord } from './network-record.ts';

// What the session's egress proxy asks before it resolves or dials anything
// (POLICY.md §8): the layered policy's network decision, the session's
// network grants, the approval mode (in `never` a prompt is refused at
// once), and an operator's answer for a `prompt`, waited for up to
// THINKFLOW_EGRESS_PROMPT_WAIT_S. Every decision is a network record in the
// session's ledger and a `network_connection` event; the record is completed
// with its bytes when the connection ends.

export type EgressTarget = { host: string; port: number };
export type ConnectionUsage = { bytes_in: number; bytes_out: number; duration_ms: number; address?: string; error?: string };
export type GateDecision =
  | { allow: true; finish: (usage: ConnectionUsage) => void }
  | { allow: false; status: 403; message: string };

export type EgressGateDeps = {
  sessions: Pick<Sessions, 'get'>; ledger: Pick<Ledger, 'networkGrants' | 'tail'>; gate: PolicyGate;
  approvals: Approvals; events: EventWriter; log: NetworkLog;
  /** THINKFLOW_EGRESS_PROMPT_WAIT_S: how long a prompted connection waits for an operator */
  promptWaitS: number;
};

/** The command running when a connection was asked for; `index` is what its approval card shows as the connecting command. */
type Running = { commandId: string | null; commandIndex: number | null; index: number };

/** Sessions whose policy the dial check reads (set by each decision, which always comes first); bounded. */
const SESSIONS_KEPT = 10_000;

export class EgressGate {
  readonly #d: EgressGateDeps;
  readonly #meta = new Map<string, SessionMeta>();

  constructor(d: EgressGateDeps) {
    this.#d = d;
  }

  async decide(sid: string, target: EgressTarget, signal?: AbortSignal): Promise<GateDecision> {
    const session = await this.#d.sessions.get(sid, true);
    if (!session || session.deleted_at) return { allow: false, status: 403, message: 'refused: the session is gone' };
    this.#remember(sid, session);
    const [grants, running] = await Promise.all([this.#d.ledger.networkGrants(sid), this.#running(sid)]);
    const evaluation = this.#d.gate.evaluateNetwork(session, target, grants);
    const record = await this.#open(session, target, evaluation, running);
    if (evaluation.decision === 'allow') return this.#allowed(record);
    if (evaluation.decision === 'forbid') return this.#refused(record, 'forbidden', `refused by ThinkFlow's egress policy: ${evaluation.reason}`);
    if (session.approval === 'never') {
      return this.#refused(record, 'forbidden', `refused by ThinkFlow's egress policy: ${evaluation.reason}; approval mode "never": a prompt is refused at once`);
    }
    return this.#ask(session, record, evaluation, running.index, signal);
  }

  /** The address about to be dialled; the session's policy as its last decision read it. */
  checkAddress(sid: string, address: string, port: number): { allowed: true } | { allowed: false; message: string } {
    const session = this.#meta.get(sid);
    if (!session) return { allowed: false, message: 'refused: no decision was made for this session' };
    const check = this.#d.gate.checkDial(session, address, port);
    return check.allowed ? { allowed: true } : { allowed: false, message: `refused by ThinkFlow's egress policy: ${check.reason}` };
  }

  async #ask(session: SessionMeta, record: NetworkRecord, evaluation: Evaluation, index: number, signal?: AbortSignal): Promise<GateDecision> {
    const sid = session.session_id;
    const a = await this.#d.approvals.requestNetwork({
      sessionId: sid, jobId: session.job_id, recordId: record.id, host: record.host, port: record.port, target: record.target,
      evaluation, ttlS: this.#d.promptWaitS, index,
    });
    record.approval = ledgerApproval(a);
    await this.#d.log.save(sid, record);
    await this.#d.events.append(sid, session.job_id, { type: 'approval_requested', approval: publicOf(a) });
    let answer: ApprovalState;
    try {
      answer = await this.#d.approvals.waitForAnswer(a.token, signal);
    } catch (err) {
      if (!(err instanceof ApprovalWaitAborted)) throw err;
      await this.#d.approvals.answer(a.token, 'reject', 'the connection was closed before an answer', 'system');
      answer = (await this.#d.approvals.get(a.token)) ?? a;
    }
    record.approval = ledgerApproval(answer);
    await this.#d.events.append(sid, session.job_id, { type: 'approval_resolved', approval: publicOf(answer) });
    if (answer.status === 'approve' || answer.status === 'approve_for_session') return this.#allowed(record);
    const why = answer.status === 'expired'
      ? `no operator answered within ${this.#d.promptWaitS} s`
      : `rejected by ${answer.decided_by ?? 'an operator'}${answer.reason ? `: ${answer.reason}` : ''}`;
    return this.#refused(record, 'rejected', `refused: the connection to ${record.target} needed an operator's approval (${evaluation.reason}); ${why}`);
  }

  async #allowed(record: NetworkRecord): Promise<GateDecision> {
    record.status = 'running';
    record.timings.started_at ??= new Date().toISOString();
    await this.#saveAndAnnounce(record);
    let finished = false;
    return {
      allow: true,
      finish: (usage) => {
        if (finished) return;
        finished = true;
        Object.assign(record, {
          status: usage.error ? 'failed' : 'succeeded', bytes_in: usage.bytes_in, bytes_out: usage.bytes_out,
          duration_ms: usage.duration_ms, address: usage.address ?? null, error: usage.error ?? null, finished_at: new Date().toISOString(),
        });
        record.timings.finished_at = record.finished_at!;
        this.#saveAndAnnounce(record).catch((err: unknown) => withIds({ session_id: record.session, job_id: record.job_id ?? undefined })
          .error({ err, record: record.id }, 'egress: the network record could not be completed'));
      },
    };
  }

  async #refused(record: NetworkRecord, status: 'forbidden' | 'rejected', message: string): Promise<GateDecision> {
    Object.assign(record, { status, error: message, finished_at: new Date().toISOString(), duration_ms: 0 });
    record.timings.finished_at = record.finished_at!;
    await this.#saveAndAnnounce(record);
    return { allow: false, status: 403, message };
  }

  async #open(session: SessionMeta, target: EgressTarget, evaluation: Evaluation, running: Running): Promise<NetworkRecord> {
    const deciding = evaluation.matched_rules.find((r) => r.decision === evaluation.decision)?.id ?? null;
    const at = new Date().toISOString();
    return this.#d.log.open(session.session_id, {
      session: session.session_id, tool: 'network', target: showHostPort(target.host, target.port), host: target.host, port: target.port,
      job_id: session.job_id, command_id: running.commandId, command_index: running.commandIndex, decision: evaluation.decision, matched_rules: evaluation.matched_rules,
      matched_rule: deciding, policy_reason: evaluation.reason, status: evaluation.decision === 'prompt' ? 'awaiting_approval' : 'running',
      approval: null, address: null, bytes_in: 0, bytes_out: 0, duration_ms: null, error: null,
      enqueued_at: at, finished_at: null, timings: { admitted_at: at, queued_at: at },
    });
  }

  async #saveAndAnnounce(record: NetworkRecord): Promise<void> {
    await this.#d.log.save(record.session, record);
    await this.#d.events.append(record.session, record.job_id, { type: 'network_connection', record });
  }

  /** The command running in the session now, if any (commands run one at a time): the one that is connecting. */
  async #running(sid: string): Promise<Running> {
    try {
      const tail = await this.#d.ledger.tail(sid, 8);
      const r = [...tail].reverse().find((x) => x.status === 'running');
      // No command running (something a command left behind): index 0, so the card names no command as the one connecting.
      return { commandId: r?.id ?? null, commandIndex: r?.index ?? null, index: r?.index ?? 0 };
    } catch (err) {
      withIds({ session_id: sid }).warn({ err: reasonOf(err) }, 'egress: the running command could not be read');
      return { commandId: null, commandIndex: null, index: 0 };
    }
  }

  #remember(sid: string, session: SessionMeta): void {
    if (this.#meta.size >= SESSIONS_KEPT) this.#meta.clear();
    this.#meta.set(sid, session);
  }
}
