import { describeGrant, type BashExplanation, type Grant } from '../../policy/index.ts';
import { isToolName, targetOf, TOOLS, type Command } from '../../protocol/index.ts';
import { type ApprovalState, type LedgerApproval, type Pipeline, type PolicyGate } from '../../pipeline/index.ts';
import { withIds, reasonOf } from '../../log/index.ts';
import type { BaseSummary, BoundedDiff } from './bounded-diff.mjs';
import { scriptLines, type ScriptLines } from './indirect-lines.ts';
import { Lru } from './lru.ts';
import type { ViewPool } from './view-pool.ts';

// The parts of an approval card that a request can make expensive (the edit's
// line diff, the bash explanation, the grant in words, the record's parse),
// computed once per approval and reused by every stream and reconnect. The
// view is keyed by the approval token: a token names one record, whose fixed
// part never changes, so no content hash is needed in the key. It is kept in
// this process (LRU) and in Redis next to the approval until it expires, so
// another API process reads it instead of computing it again.

export type CardCommand = {
  /** the record's command id: for a network approval, the command that was connecting */
  id: string | null;
  path: string | null; dest: string | null; cmd: string | null; content: string | null; content_size: number | null;
  /** an edit's texts, each cut at THINKFLOW_DIFF_MAX_BYTES characters; `text_truncated` says one was */
  old_text: string | null; new_text: string | null; text_truncated: boolean;
};
export type CardView = {
  policy_reason: string | null;
  command: CardCommand;
  diff: BoundedDiff['diff'];
  diff_truncated: boolean;
  diff_note: string | null;
  edit_sides: BoundedDiff['edit_sides'] | null;
  bash: BashExplanation | null;
  grant: { scope: Grant | null; words: string };
  /** the shell script a bash command runs (the approval's `indirect`), line by line with each part's decision */
  indirect_lines?: ScriptLines | null;
};
export type RecentEntry = {
  index: number; id: string; tool: string; status: string; target: string;
  decided_by: string | null; decision: string | null;
};
type Head = { id: string; tool: string; target: string };

export type CardViewDeps = {
  pipeline: Pick<Pipeline, 'approvals' | 'records' | 'sessionMeta'>;
  gate: Pick<PolicyGate, 'explainBash'>;
  pool: ViewPool;
  /** counts the views this process computes, by result */
  computed?: { inc(labels: { result: string }): void };
};

const RECENT = 5;
const VIEWS_KEPT = 1000;
const HEADS_KEPT = 5000;
const COMPUTING = 2;
/** a recent entry's target (a bash script can be 64 KiB) is cut here */
const TARGET_CHARS = 2000;

export class CardViews {
  readonly #d: CardViewDeps;
  readonly #views = new Lru<CardView>(VIEWS_KEPT);
  readonly #heads = new Lru<Head>(HEADS_KEPT);
  readonly #inflight = new Map<string, Promise<CardView>>();
  readonly #waiting: (() => void)[] = [];
  #computing = 0;

  constructor(deps: CardViewDeps) {
    this.#d = deps;
  }

  async view(a: ApprovalState): Promise<CardView> {
    const hit = this.#views.get(a.token);
    if (hit) return hit;
    // Streams that open together wait for the same computation.
    let p = this.#inflight.get(a.token);
    if (!p) {
      p = this.#load(a).finally(() => this.#inflight.delete(a.token));
      this.#inflight.set(a.token, p);
    }
    const v = await p;
    this.#views.set(a.token, v);
    return v;
  }

  /**
   * The session's last entries before this one (`before`: its ledger index), from cached heads and the small
   * fields that change. Records after it are commands queued behind it: what led here is what came before.
   */
  async recent(sid: string, before: number): Promise<RecentEntry[]> {
    const l = this.#d.pipeline.records;
    const from = Math.max(1, before - RECENT);
    const indexes = Array.from({ length: Math.max(0, before - from) }, (_, k) => from + k);
    const [states, heads] = await Promise.all([l.states(sid, indexes), Promise.all(indexes.map((i) => this.#head(sid, i)))]);
    // An approve_edited answer rewrote its record (pipeline/approval-edit.ts): a head cached before shows the asked command.
    await Promise.all(indexes.map(async (i, j) => { if (states[j]?.approval?.decision === 'approve_edited') heads[j] = await this.#head(sid, i, true); }));
    const out: RecentEntry[] = [];
    indexes.forEach((index, j) => {
      const s = states[j];
      const h = heads[j];
      if (!s || !h) return;
      out.push({ index, ...h, status: s.status, decided_by: decidedBy(s.approval), decision: s.approval?.decision ?? null });
    });
    return out;
  }

  async #load(a: ApprovalState): Promise<CardView> {
    const stored = await this.#d.pipeline.approvals.view(a.session_id, a.token);
    if (stored) return JSON.parse(stored) as CardView;
    // A snapshot of many new approvals holds at most COMPUTING records in memory at once.
    while (this.#computing >= COMPUTING) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#computing++;
    let v: CardView;
    try {
      v = await this.#compute(a);
    } finally {
      this.#computing--;
      this.#waiting.shift()?.();
    }
    await this.#d.pipeline.approvals.saveView(a.session_id, a.token, JSON.stringify(v), a.expires_at);
    return v;
  }

  async #compute(a: ApprovalState): Promise<CardView> {
    const p = this.#d.pipeline;
    const [raw, grants, session] = await Promise.all([p.records.rawBase(a.session_id, a.index), p.approvals.grantOf(a.token), p.sessionMeta(a.session_id, false)]);
    // Bodies past THINKFLOW_RECORD_BODY_BYTES are only in the full command (kept while it waits).
    const full = raw && cutBodies(raw) ? await p.records.rawCommand(a.session_id, a.index) : null;
    let s: BaseSummary | null = null;
    let failed: string | null = null;
    if (raw) {
      try {
        s = await this.#d.pool.summarize(raw, isToolName(a.tool) && TOOLS[a.tool].body === 'edit', full);
        this.#heads.set(`${a.session_id}:${a.index}`, headOf(s));
      } catch (err) {
        // Shown on the card and kept with it: a failure is not retried per stream.
        failed = `not shown: the record could not be read (${reasonOf(err)})`;
        withIds({ session_id: a.session_id, job_id: a.job_id ?? undefined }).error({ err, command_id: a.command_id }, 'approval card: the record could not be summarized');
      }
    }
    const command: Command = { id: a.command_id, tool: a.tool as Command['tool'], need_result: false, path: s?.path ?? undefined, dest: s?.dest ?? undefined, cmd: s?.cmd ?? undefined };
    // Segments are judged without grants: the card explains why the command stopped here.
    const bash = a.tool === 'bash' && s?.cmd && session ? this.#d.gate.explainBash(session, s.cmd, []) : null;
    const edit = s?.edit ?? null;
    this.#d.computed?.inc({ result: failed ? 'failed' : !edit ? 'plain' : edit.diff ? 'diff' : 'too_large' });
    return {
      // A network approval's record (a.index) is the command that was connecting: its own reason is not why the connection stopped.
      policy_reason: a.tool === 'network' ? null : s?.policy_reason ?? null,
      command: {
        id: s?.id ?? null, path: s?.path ?? null, dest: s?.dest ?? null, cmd: s?.cmd ?? null, content: s?.content ?? null, content_size: s?.content_size ?? null,
        old_text: s?.old_text ?? null, new_text: s?.new_text ?? null, text_truncated: s?.text_truncated ?? false,
      },
      diff: edit?.diff ?? null,
      diff_truncated: edit?.diff_truncated ?? failed !== null,
      diff_note: edit?.diff_note ?? failed,
      edit_sides: edit?.edit_sides ?? null,
      bash,
      grant: { scope: grants[0] ?? null, words: grantWords(a, grants, command) },
      indirect_lines: a.indirect && session ? scriptLines(this.#d.gate, session, a.indirect) : null,
    };
  }

  async #head(sid: string, index: number, fresh = false): Promise<Head | null> {
    const key = `${sid}:${index}`;
    const hit = fresh ? undefined : this.#heads.get(key);
    if (hit) return hit;
    const raw = await this.#d.pipeline.records.rawBase(sid, index);
    if (!raw) return null;
    const h = headOf(await this.#d.pool.summarize(raw, false));
    this.#heads.set(key, h);
    return h;
  }
}

function headOf(s: BaseSummary): Head {
  const target = targetOf({ tool: s.tool as Command['tool'], path: s.path, dest: s.dest, cmd: s.cmd });
  return { id: s.id, tool: s.tool, target: target.length > TARGET_CHARS ? `${target.slice(0, TARGET_CHARS - 1)}…` : target };
}

const decidedBy = (a: LedgerApproval | null) => a?.decided_by ?? null;

// The exact grants are what approve_for_session gives (POLICY.md §7), in words.
function grantWords(a: ApprovalState, grants: Grant[], command: Command): string {
  const exact = a.grant_options?.find((o) => o.scope === 'exact')?.covers;
  // A network grant is a host:port, not a command's grant: its request says in words what it covers.
  if (a.tool === 'network' && exact) return exact;
  if (grants.length > 0) return grants.map((g) => describeGrant(g, command)).join('; ');
  return exact ?? 'no session grant is possible for this command: approve it once or reject it';
}

// The base is small (its bodies are bounded): a byte search, no parse.
function cutBodies(base: Buffer): boolean {
  return base.includes('_truncated":true');
}
