// Pending approvals, live: one stream (GET /v1/approvals/events) gives a
// snapshot, then every new request and every answer, from any operator. Cards
// are grouped by job, oldest first; a decided card leaves every dashboard.
import { connectionWords, stream } from './api.js';
import { renderCard } from './cards.js';
import { answer, confirmDecision } from './confirm.js';
import { clear, clock, h, toast, when } from './dom.js';

const WARN_MS = 2 * 60_000;

/** The cards on the page, their groups and the selection; all DOM changes go through here. */
class Board {
  constructor(root, setPending) {
    this.root = root;
    this.setPending = setPending;
    this.cards = new Map(); // token -> { data, el, group }
    this.groups = new Map(); // job or session -> { key, el, cardsEl, oldest }
    // Selection spans the page: a session's queue pauses at its first approval
    // (POLICY.md §5), so one job has at most one card at a time.
    this.selected = new Set();
    this.list = h('div', { id: 'approval-groups' });
    this.bar = h('div', { class: 'batch', role: 'group', 'aria-label': 'Batch actions' });
    this.empty = h('p', { class: 'muted', id: 'no-approvals' }, 'Nothing waits for an operator. New requests appear here by themselves.');
    root.append(h('p', { class: 'muted' }, 'Oldest first, grouped by job. Select several cards to decide them together: the confirmation lists each one.'), this.bar, this.empty, this.list);
    this.renderBar();
  }

  count() {
    this.setPending([...this.cards.values()].filter((c) => !c.el.classList.contains('expired')).length);
    this.empty.hidden = this.cards.size > 0;
  }

  /** Selected cards in page order: groups by their oldest request, cards oldest first. */
  chosen() {
    return [...this.list.querySelectorAll('.card')].map((el) => this.cards.get(el.dataset.token)?.data).filter((c) => c && this.selected.has(c.token));
  }

  renderBar() {
    const n = this.selected.size;
    clear(this.bar,
      h('span', { class: 'muted' }, n ? `${n} selected` : 'Nothing selected'),
      h('button', { type: 'button', class: 'batch-approve', disabled: n < 1, onclick: () => this.run(this.chosen(), 'approve') }, `Approve selected (${n})…`),
      h('button', { type: 'button', class: 'batch-reject', disabled: n < 1, onclick: () => this.run(this.chosen(), 'reject') }, `Reject selected (${n})…`));
  }

  groupFor(data) {
    const key = data.job_id ?? data.session_id;
    let g = this.groups.get(key);
    if (g) return g;
    const cardsEl = h('div', { class: 'group-cards' });
    const el = h('section', { class: 'group', dataset: { job: key }, 'aria-labelledby': `g-${key}` },
      h('h2', { id: `g-${key}` }, data.job_id ? h('a', { href: `#/jobs/${data.job_id}` }, `Job ${data.job_id}`) : `Session ${data.session_id}`),
      cardsEl);
    g = { key, el, cardsEl, oldest: data.created_at };
    this.groups.set(key, g);
    const after = [...this.list.children].find((x) => (this.groups.get(x.dataset.job)?.oldest ?? '') > g.oldest);
    this.list.insertBefore(el, after ?? null);
    return g;
  }

  add(data) {
    if (this.cards.has(data.token)) return;
    const g = this.groupFor(data);
    const el = renderCard(data, {
      actions: [
        h('button', { type: 'button', class: 'primary approve', onclick: () => this.approve(data) }, 'Approve'),
        h('button', { type: 'button', class: 'approve-session', onclick: () => this.run([data], 'approve_for_session') }, 'Approve for session…'),
        h('button', { type: 'button', class: 'danger reject', onclick: () => this.run([data], 'reject') }, 'Reject…'),
      ],
      onSelect: (on) => { if (on) this.selected.add(data.token); else this.selected.delete(data.token); this.renderBar(); },
    });
    el.addEventListener('keydown', (e) => this.onKey(e, data, el));
    this.cards.set(data.token, { data, el, group: g });
    const after = [...g.cardsEl.children].find((x) => (this.cards.get(x.dataset.token)?.data.created_at ?? '') > data.created_at);
    g.cardsEl.insertBefore(el, after ?? null);
    this.tick();
    this.count();
  }

  /** A card leaves: decided here or elsewhere (`resolved` = the answer), or dismissed. Expired ones stay, marked. */
  remove(token, resolved) {
    const entry = this.cards.get(token);
    if (!entry) return;
    if (resolved?.status === 'expired') return this.expire(entry, resolved);
    const { el, group: g } = entry;
    const next = el.nextElementSibling ?? el.previousElementSibling;
    const hadFocus = el.contains(document.activeElement);
    el.remove();
    this.cards.delete(token);
    this.selected.delete(token);
    this.renderBar();
    if (g.cardsEl.children.length === 0) { g.el.remove(); this.groups.delete(g.key); }
    if (hadFocus) this.focusFirst(next);
    if (resolved) toast(`Command ${resolved.command_id} of ${resolved.job_id ?? resolved.session_id}: ${resolved.decision} by ${resolved.decided_by} at ${when(resolved.decided_at)}.`);
    this.count();
  }

  expire(entry, resolved) {
    const { el, data } = entry;
    if (el.querySelector('.dismiss')) return;
    el.classList.add('expired');
    this.selected.delete(data.token);
    this.renderBar();
    for (const b of el.querySelectorAll('.actions button, input.sel')) b.disabled = true;
    el.querySelector('.timer').textContent = `expired at ${when(resolved?.decided_at ?? data.expires_at)}`;
    el.querySelector('.card-status').textContent = 'This approval expired while it was open: the command was not run, and the agent is told that no operator answered in time.';
    el.querySelector('.actions')?.append(h('button', { type: 'button', class: 'dismiss', onclick: () => { el.classList.remove('expired'); this.remove(data.token, null); } }, 'Dismiss'));
    this.count();
  }

  focusFirst(preferred) {
    (preferred?.isConnected ? preferred : this.list.querySelector('.card') ?? this.root.querySelector('h1'))?.focus();
  }

  async approve(data) {
    const status = this.cards.get(data.token)?.el.querySelector('.card-status');
    if (status) status.textContent = 'Sending…';
    const out = await answer(data, 'approve');
    if (out.ok) this.remove(data.token, null);
    else if (status) status.textContent = out.message;
    else toast(out.message);
  }

  async run(items, decision) {
    await confirmDecision(items, decision, {
      onDone: (done, results) => done.forEach((c, i) => { if (results[i].ok) this.remove(c.token, null); }),
    });
    // The decided card is gone: keyboard users continue at the first card left.
    if (!document.activeElement || document.activeElement === document.body) this.focusFirst(null);
  }

  onKey(e, data, el) {
    if (e.target.matches('input, textarea, select') || e.altKey || e.ctrlKey || e.metaKey || el.classList.contains('expired')) return;
    const move = (dir) => {
      const all = [...this.list.querySelectorAll('.card')];
      all[all.indexOf(el) + dir]?.focus();
    };
    const acts = {
      a: () => this.approve(data),
      s: () => this.run([data], 'approve_for_session'),
      r: () => this.run([data], 'reject'),
      x: () => el.querySelector('input.sel')?.click(),
      j: () => move(1), arrowdown: () => move(1), k: () => move(-1), arrowup: () => move(-1),
    };
    const act = acts[e.key.toLowerCase()];
    if (act) { e.preventDefault(); act(); }
  }

  /** Time left on every card, with a warning in the last minutes. */
  tick() {
    const now = Date.now();
    for (const entry of this.cards.values()) {
      if (entry.el.classList.contains('expired')) continue;
      const left = Date.parse(entry.data.expires_at) - now;
      if (left <= 0) { this.expire(entry, null); continue; }
      const warn = left <= WARN_MS;
      entry.el.classList.toggle('warn', warn);
      entry.el.querySelector('.timer').textContent = warn ? `⚠ expires in ${clock(left)}: decide now` : `expires in ${clock(left)}`;
    }
  }

  /** A fresh state after every (re)connect: drop what is gone, add what is new. */
  snapshot(approvals) {
    const now = new Set(approvals.map((a) => a.token));
    for (const [token, entry] of this.cards) if (!now.has(token) && !entry.el.classList.contains('expired')) this.remove(token, null);
    for (const a of approvals) this.add(a);
    this.count();
  }
}

export function approvalsView(root, { me, setConn, setPending }) {
  clear(root, h('h1', { tabindex: '-1' }, 'Pending approvals'));
  if (me.role !== 'operator' && me.role !== 'admin') {
    root.append(h('p', { class: 'notice' }, `Approvals are decided by operators. Your key (${me.name}) is a submitter: it sees only its own jobs and cannot decide. Follow them under Jobs.`));
    return { stop() {} };
  }
  const board = new Board(root, setPending);
  const timer = setInterval(() => board.tick(), 1000);
  const stop = stream('/v1/approvals/events', {
    onStatus: (s) => setConn(connectionWords('Approvals', s)),
    onEvent: (type, data) => {
      if (type === 'snapshot') board.snapshot(data.approvals);
      else if (type === 'approval_requested') board.add(data);
      else if (type === 'approval_resolved') board.remove(data.token, data);
    },
  });
  // The count is only known while this view's stream runs.
  return { stop() { stop(); clearInterval(timer); setPending(null); } };
}
