// Pending approvals, live: one stream (GET /v1/approvals/events) gives a
// snapshot, then every new request and every answer, from any operator. Cards
// are grouped by job, oldest first; a decided card leaves every dashboard.
import { api, connectionWords, stream } from './api.js';
import { renderCard } from './cards.js';
import { answer, confirmDecision } from './confirm.js';
import { clear, clock, h, toast, when } from './dom.js';

const WARN_MS = 2 * 60_000;

export function approvalsView(root, { me, setConn, setPending }) {
  const canDecide = me.role === 'operator' || me.role === 'admin';
  clear(root, h('h1', { tabindex: '-1' }, 'Pending approvals'));
  if (!canDecide) {
    root.append(h('p', { class: 'notice' }, `Approvals are decided by operators. Your key (${me.name}) is a submitter: it sees only its own jobs and cannot decide. Follow them under Jobs.`));
    return { stop() {} };
  }
  const list = h('div', { id: 'approval-groups' });
  // Selection spans the page: a session's queue pauses at its first approval
  // (POLICY.md §5), so one job has at most one card at a time.
  const selected = new Set();
  const bar = h('div', { class: 'batch', role: 'group', 'aria-label': 'Batch actions' });
  const empty = h('p', { class: 'muted', id: 'no-approvals' }, 'Nothing waits for an operator. New requests appear here by themselves.');
  root.append(h('p', { class: 'muted' }, 'Oldest first, grouped by job. Select several cards to decide them together: the confirmation lists each one.'), bar, empty, list);

  const cards = new Map(); // token -> { data, el, group }
  const groups = new Map(); // job key -> { el, cardsEl, oldest }

  const count = () => {
    const pending = [...cards.values()].filter((c) => !c.el.classList.contains('expired')).length;
    setPending(pending);
    empty.hidden = cards.size > 0;
  };

  function groupFor(data) {
    const key = data.job_id ?? data.session_id;
    let g = groups.get(key);
    if (g) return g;
    const cardsEl = h('div', { class: 'group-cards' });
    const el = h('section', { class: 'group', dataset: { job: key }, 'aria-labelledby': `g-${key}` },
      h('h2', { id: `g-${key}` }, data.job_id ? h('a', { href: `#/jobs/${data.job_id}` }, `Job ${data.job_id}`) : `Session ${data.session_id}`),
      cardsEl);
    g = { key, el, cardsEl, oldest: data.created_at };
    groups.set(key, g);
    // Groups in order of their oldest request.
    const after = [...list.children].find((x) => (groups.get(x.dataset.job)?.oldest ?? '') > g.oldest);
    list.insertBefore(el, after ?? null);
    return g;
  }

  function renderBatchBar() {
    const n = selected.size;
    // Page order: groups by their oldest request, cards oldest first.
    const chosen = () => [...list.querySelectorAll('.card')].map((el) => cards.get(el.dataset.token)?.data).filter((c) => c && selected.has(c.token));
    clear(bar,
      h('span', { class: 'muted' }, n ? `${n} selected` : 'Nothing selected'),
      h('button', { type: 'button', class: 'batch-approve', disabled: n < 1, onclick: () => run(chosen(), 'approve') }, `Approve selected (${n})…`),
      h('button', { type: 'button', class: 'batch-reject', disabled: n < 1, onclick: () => run(chosen(), 'reject') }, `Reject selected (${n})…`));
  }
  renderBatchBar();

  async function run(items, decision) {
    await confirmDecision(items, decision, {
      onDone: (done, results) => done.forEach((c, i) => { if (results[i].ok) remove(c.token, null); }),
    });
    // The decided card is gone: keyboard users continue at the first card left.
    if (!document.activeElement || document.activeElement === document.body) (list.querySelector('.card') ?? root.querySelector('h1'))?.focus();
  }

  async function quickApprove(data) {
    const entry = cards.get(data.token);
    const status = entry?.el.querySelector('.card-status');
    if (status) status.textContent = 'Sending…';
    const out = await answer(data, 'approve');
    if (out.ok) remove(data.token, null);
    else if (status) status.textContent = out.message;
    else toast(out.message);
  }

  function add(data) {
    if (cards.has(data.token)) return;
    const g = groupFor(data);
    const actions = [
      h('button', { type: 'button', class: 'primary approve', onclick: () => quickApprove(data) }, 'Approve'),
      h('button', { type: 'button', class: 'approve-session', onclick: () => run([data], 'approve_for_session') }, 'Approve for session…'),
      h('button', { type: 'button', class: 'danger reject', onclick: () => run([data], 'reject') }, 'Reject…'),
    ];
    const el = renderCard(data, {
      actions,
      onSelect: (on) => { if (on) selected.add(data.token); else selected.delete(data.token); renderBatchBar(); },
    });
    el.addEventListener('keydown', (e) => onKey(e, data, el));
    cards.set(data.token, { data, el, group: g });
    const after = [...g.cardsEl.children].find((x) => (cards.get(x.dataset.token)?.data.created_at ?? '') > data.created_at);
    g.cardsEl.insertBefore(el, after ?? null);
    tick();
    count();
  }

  function remove(token, resolved) {
    const entry = cards.get(token);
    if (!entry) return;
    if (resolved?.status === 'expired') {
      expire(entry, resolved);
      return;
    }
    const { el, group: g } = entry;
    const next = el.nextElementSibling ?? el.previousElementSibling;
    const hadFocus = el.contains(document.activeElement);
    el.remove();
    cards.delete(token);
    selected.delete(token);
    renderBatchBar();
    if (g.cardsEl.children.length === 0) { g.el.remove(); groups.delete(g.key); }
    if (hadFocus) (next ?? list.querySelector('.card') ?? root.querySelector('h1'))?.focus();
    if (resolved) toast(`Command ${resolved.command_id} of ${resolved.job_id ?? resolved.session_id}: ${resolved.decision} by ${resolved.decided_by} at ${when(resolved.decided_at)}.`);
    count();
  }

  function expire(entry, resolved) {
    const { el } = entry;
    if (el.classList.contains('expired') && el.querySelector('.dismiss')) return;
    el.classList.add('expired');
    selected.delete(entry.data.token);
    renderBatchBar();
    for (const b of el.querySelectorAll('.actions button, input.sel')) b.disabled = true;
    el.querySelector('.timer').textContent = `expired at ${when(resolved?.decided_at ?? entry.data.expires_at)}`;
    el.querySelector('.card-status').textContent = 'This approval expired while it was open: the command was not run, and the agent is told that no operator answered in time.';
    el.querySelector('.actions')?.append(h('button', { type: 'button', class: 'dismiss', disabled: false, onclick: () => { entry.el.classList.remove('expired'); remove(entry.data.token, null); } }, 'Dismiss'));
    count();
  }

  function onKey(e, data, el) {
    if (e.target.matches('input, textarea, select') || e.altKey || e.ctrlKey || e.metaKey) return;
    if (el.classList.contains('expired')) return;
    const k = e.key.toLowerCase();
    const move = (dir) => {
      const all = [...list.querySelectorAll('.card')];
      all[all.indexOf(el) + dir]?.focus();
    };
    const acts = {
      a: () => quickApprove(data),
      s: () => run([data], 'approve_for_session'),
      r: () => run([data], 'reject'),
      x: () => el.querySelector('input.sel')?.click(),
      j: () => move(1), arrowdown: () => move(1), k: () => move(-1), arrowup: () => move(-1),
    };
    if (acts[k]) { e.preventDefault(); acts[k](); }
  }

  function tick() {
    const now = Date.now();
    for (const entry of cards.values()) {
      if (entry.el.classList.contains('expired')) continue;
      const left = Date.parse(entry.data.expires_at) - now;
      const t = entry.el.querySelector('.timer');
      if (left <= 0) { expire(entry, null); continue; }
      const warn = left <= WARN_MS;
      entry.el.classList.toggle('warn', warn);
      t.textContent = warn ? `⚠ expires in ${clock(left)}: decide now` : `expires in ${clock(left)}`;
    }
  }
  const timer = setInterval(tick, 1000);

  const stop = stream('/v1/approvals/events', {
    onStatus: (s) => setConn(connectionWords('Approvals', s)),
    onEvent: (type, data) => {
      if (type === 'snapshot') {
        // A fresh state after every (re)connect: drop what is gone, add what is new.
        const now = new Set(data.approvals.map((a) => a.token));
        for (const [token, entry] of cards) if (!now.has(token) && !entry.el.classList.contains('expired')) remove(token, null);
        for (const a of data.approvals) add(a);
        count();
      } else if (type === 'approval_requested') add(data);
      else if (type === 'approval_resolved') remove(data.token, data);
    },
  });
  // The count is only known while this view's stream runs.
  return { stop() { stop(); clearInterval(timer); setPending(null); } };
}
