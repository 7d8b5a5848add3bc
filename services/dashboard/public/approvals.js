// Pending approvals, live: the signed-in operator's store (live.js) gives a
// snapshot, then every new request and every answer, from any operator. Cards
// are grouped by job, oldest first, except that a group whose card is about
// to expire moves to the top; a decided card leaves every dashboard. While the
// connection is down nothing can be decided: the state may be out of date.
import { connectionWords } from './api.js';
import { renderCard } from './cards.js';
import { groupLabel } from './card-context.js';
import { answer, confirmDecision } from './confirm.js';
import { leaveDecided } from './decided-card.js';
import { editAction } from './edit-approve.js';
import { clear, clock, h, toast, when } from './dom.js';
import { label } from './labels.js';

const WARN_MS = 2 * 60_000;
/** A card is also about to expire in the last fifth of its time (a short TTL warns before its last 2 minutes). */
const WARN_SHARE = 0.2;

/** The cards on the page, their groups and the selection; all DOM changes go through here. */
class Board {
  constructor(root) {
    this.root = root;
    /** false from a dropped connection until the next snapshot: buttons are off meanwhile */
    this.fresh = false;
    this.cards = new Map(); // token -> { data, el, group }
    this.groups = new Map(); // job or session -> { key, el, cardsEl, oldest }
    // Selection spans the page: a session's queue pauses at its first approval
    // (POLICY.md §5), so one job has at most one card at a time.
    this.selected = new Set();
    this.list = h('div', { id: 'approval-groups' });
    this.bar = h('div', { class: 'batch', role: 'group', 'aria-label': 'Batch actions' });
    this.empty = h('p', { class: 'muted', id: 'no-approvals' }, 'Nothing waits for an operator. New requests appear here by themselves.');
    root.append(h('p', { class: 'muted small intro' }, 'Oldest first (about to expire: on top), grouped by job. Focus or click a card for its details; select several to decide them together.'), this.bar, this.empty, this.list);
    this.renderBar();
  }

  count() {
    this.empty.hidden = this.cards.size > 0;
  }

  /**
   * Buttons off while the state may be stale, back on with the next snapshot. Only buttons this
   * turned off are turned on again (an expired card's stay off, as do others' own disabled ones).
   */
  setFresh(fresh) {
    this.fresh = fresh;
    this.list.classList.toggle('stale', !fresh);
    for (const { el } of this.cards.values()) this.freshButtons(el);
    this.renderBar();
  }

  freshButtons(el) {
    const expired = el.classList.contains('expired');
    // Cancel of an open editor (edit-approve.js) decides nothing: it stays usable.
    for (const b of el.querySelectorAll('.actions button:not(.dismiss, .edit-cancel)')) {
      if (!this.fresh && !expired && !b.disabled) { b.disabled = true; b.dataset.staleOff = '1'; }
      else if ((this.fresh || expired) && b.dataset.staleOff) { delete b.dataset.staleOff; b.disabled = expired; }
    }
  }

  /** Selected cards in page order: groups by their oldest request, cards oldest first. */
  chosen() {
    return [...this.list.querySelectorAll('.card')].map((el) => this.cards.get(el.dataset.token)?.data).filter((c) => c && this.selected.has(c.token));
  }

  renderBar() {
    const n = this.selected.size;
    clear(this.bar,
      h('span', { class: 'muted' }, n ? `${n} selected` : 'Nothing selected'),
      h('button', { type: 'button', class: 'batch-approve', disabled: n < 1 || !this.fresh, onclick: () => this.run(this.chosen(), 'approve') }, `Approve selected (${n})…`),
      h('button', { type: 'button', class: 'batch-reject', disabled: n < 1 || !this.fresh, onclick: () => this.run(this.chosen(), 'reject') }, `Reject selected (${n})…`),
      this.fresh ? null : h('span', { class: 'warn-text paused' }, 'Deciding is paused until the current state is loaded again.'));
  }

  groupFor(data) {
    const key = data.job_id ?? data.session_id;
    let g = this.groups.get(key);
    if (g) return g;
    const cardsEl = h('div', { class: 'group-cards' });
    const el = h('section', { class: 'group', dataset: { job: key }, 'aria-labelledby': `g-${key}` },
      h('h2', { id: `g-${key}` }, groupLabel(data)),
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
        editAction(data, { onApproved: () => this.remove(data.token, null) }),
      ],
      onSelect: (on) => { if (on) this.selected.add(data.token); else this.selected.delete(data.token); this.renderBar(); },
    });
    el.addEventListener('keydown', (e) => this.onKey(e, data, el));
    this.cards.set(data.token, { data, el, group: g });
    const after = [...g.cardsEl.children].find((x) => (this.cards.get(x.dataset.token)?.data.created_at ?? '') > data.created_at);
    g.cardsEl.insertBefore(el, after ?? null);
    this.freshButtons(el);
    this.tick(true);
    this.count();
  }

  /** A card leaves: decided here or elsewhere (`resolved` = the answer), or dismissed. Expired ones stay, marked. */
  remove(token, resolved) {
    const entry = this.cards.get(token);
    if (!entry) return;
    if (resolved?.status === 'expired') return this.expire(entry, resolved);
    const { el, group: g } = entry;
    // Keyboard users go on with the next card on the page (across groups), else the one before.
    const all = [...this.list.querySelectorAll('.card')];
    const at = all.indexOf(el);
    const next = all[at + 1] ?? all[at - 1];
    const hadFocus = el.contains(document.activeElement);
    const dropGroup = () => { if (g.cardsEl.children.length === 0 && this.groups.get(g.key) === g) { g.el.remove(); this.groups.delete(g.key); } };
    // A decided card stays a few seconds as a notice of the decision and the command's outcome (decided-card.js).
    if (resolved) leaveDecided(el, resolved, dropGroup); else el.remove();
    this.cards.delete(token);
    this.selected.delete(token);
    this.renderBar();
    dropGroup();
    if (hadFocus) this.focusFirst(next);
    if (resolved) toast(`Command ${resolved.command_id} of ${resolved.job_id ?? resolved.session_id}: ${label(resolved.decision)} by ${resolved.decided_by} at ${when(resolved.decided_at)}.`);
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
    if (!this.fresh) return;
    const status = this.cards.get(data.token)?.el.querySelector('.card-status');
    if (status) status.textContent = 'Sending…';
    const out = await answer(data, 'approve');
    if (out.ok) this.remove(data.token, out.approval ?? null);
    else if (status) status.textContent = out.message;
    else toast(out.message);
  }

  async run(items, decision) {
    await confirmDecision(items, decision, {
      onDone: (done, results) => done.forEach((c, i) => { if (results[i].ok) this.remove(c.token, results[i].approval ?? null); }),
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
    // Deciding keys wait for a fresh state, as the buttons do.
    const decide = (f) => () => { if (this.fresh) f(); };
    const acts = {
      a: decide(() => this.approve(data)),
      s: decide(() => this.run([data], 'approve_for_session')),
      r: decide(() => this.run([data], 'reject')),
      x: () => el.querySelector('input.sel')?.click(),
      j: () => move(1), arrowdown: () => move(1), k: () => move(-1), arrowup: () => move(-1),
    };
    const act = acts[e.key.toLowerCase()];
    if (act) { e.preventDefault(); act(); }
  }

  /** Time left on every card; one about to expire is marked and its group moves to the top. */
  tick(reorder = false) {
    const now = Date.now();
    let changed = reorder;
    for (const entry of this.cards.values()) {
      if (entry.el.classList.contains('expired')) continue;
      const left = Date.parse(entry.data.expires_at) - now;
      if (left <= 0) { this.expire(entry, null); changed = true; continue; }
      const ttl = Date.parse(entry.data.expires_at) - Date.parse(entry.data.created_at);
      const warn = left <= WARN_MS || left <= ttl * WARN_SHARE;
      if (warn !== entry.el.classList.contains('warn')) changed = true;
      entry.el.classList.toggle('warn', warn);
      entry.el.querySelector('.timer').textContent = warn ? `⚠ expires in ${clock(left)}: decide now` : `expires in ${clock(left)}`;
    }
    if (changed) this.order();
  }

  /** Groups with a card about to expire first (soonest first), then the others oldest first. */
  order() {
    const soonest = new Map();
    for (const { el, data, group } of this.cards.values()) {
      if (!el.classList.contains('warn') || el.classList.contains('expired')) continue;
      soonest.set(group, Math.min(soonest.get(group) ?? Infinity, Date.parse(data.expires_at)));
    }
    const rank = (g) => (soonest.has(g) ? [0, soonest.get(g)] : [1, Date.parse(g.oldest)]);
    const groups = [...this.groups.values()].sort((a, b) => {
      const [ra, rb] = [rank(a), rank(b)];
      return ra[0] - rb[0] || ra[1] - rb[1];
    });
    const now = [...this.list.children];
    if (groups.every((g, i) => now[i] === g.el)) return;
    // Moving an element takes the focus out of it: it goes back where it was.
    const active = document.activeElement;
    for (const g of groups) this.list.append(g.el);
    if (active && active !== document.activeElement && active.isConnected) active.focus({ preventScroll: true });
  }

  /** A fresh state after every (re)connect: drop what is gone (decided elsewhere meanwhile), add what is new. */
  snapshot(approvals) {
    const now = new Set(approvals.map((a) => a.token));
    for (const [token, entry] of this.cards) if (!now.has(token) && !entry.el.classList.contains('expired')) this.remove(token, null);
    for (const a of approvals) this.add(a);
    this.count();
  }
}

/** `live`: the operator's pending approvals (live.js), kept by the app across views; null for a submitter. */
export function approvalsView(root, { me, setConn, live }) {
  clear(root, h('h1', { tabindex: '-1' }, 'Pending approvals'));
  if (!live || (me.role !== 'operator' && me.role !== 'admin')) {
    root.append(h('p', { class: 'notice' }, `Approvals are decided by operators. Your key (${me.name}) is a submitter: it sees only its own jobs and cannot decide. Follow them under Jobs.`));
    return { stop() {} };
  }
  const board = new Board(root);
  const timer = setInterval(() => board.tick(), 1000);
  setConn(connectionWords('Approvals', live.status));
  if (live.loaded) board.snapshot(live.cards());
  board.setFresh(live.fresh);
  const unsubscribe = live.subscribe((type, data) => {
    if (type === 'status') {
      setConn(connectionWords('Approvals', data));
      if (data.state !== 'live') board.setFresh(false);
    } else if (type === 'snapshot') {
      board.snapshot(data.approvals);
      board.setFresh(true);
    } else if (type === 'requested') board.add(data);
    else if (type === 'resolved') board.remove(data.token, data);
  });
  return { stop() { unsubscribe(); clearInterval(timer); } };
}
