// The "Decided" view (#/decided?…): answered and expired approvals, newest
// first, each with who decided, when, why and what the command then did
// (GET /v1/approvals?status=decided|expired, API.md additions 2026-12-01).
// The filters live in the address (#/decided?job_id=…&decided_by=…), so a
// filtered list can be linked to, e.g. from a job page.
import { api, words } from './api.js';
import { clear, h, when } from './dom.js';
import { label } from './labels.js';
import { outcomeWords } from './decided-card.js';

const SHOWN = 200;
/** While an approved command has no outcome yet, the list is read again this often, for at most REFRESH_FOR_MS. */
const REFRESH_MS = 3000;
const REFRESH_FOR_MS = 120_000;
const DECISIONS = ['', 'approve', 'approve_for_session', 'approve_edited', 'reject', 'expired'];
const REFUSED = new Set(['reject', 'expired']);
/** The filters the API takes, by their query names, with the form's words for them. */
const FIELDS = [['job_id', 'Job', 'job_…'], ['session_id', 'Session', 'ses_…'], ['decided_by', 'Operator', 'name, or system']];

/** The filters in the address: `#/decided?job_id=…&decision=…`. */
export function decidedFilters(hash = location.hash) {
  const q = hash.indexOf('?');
  const p = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  return Object.fromEntries(['job_id', 'session_id', 'decided_by', 'decision', 'since'].map((k) => [k, p.get(k) ?? '']));
}

/** The rows for `f`: one request per status the decision filter needs, newest first. */
async function load(f) {
  const base = new URLSearchParams();
  for (const [k] of FIELDS) if (f[k]) base.set(k, f[k]);
  if (f.since) base.set('since', new Date(f.since).toISOString());
  const ask = async (status, limit) => (await api(`/v1/approvals?${new URLSearchParams([...base, ['status', status], ['limit', String(limit)]])}`)).approvals;
  if (f.decision === 'expired') return ask('expired', SHOWN);
  if (f.decision) return (await ask('decided', 1000)).filter((a) => a.decision === f.decision).slice(0, SHOWN);
  const [decided, expired] = await Promise.all([ask('decided', SHOWN), ask('expired', SHOWN)]);
  return [...decided, ...expired].sort((a, b) => b.created_at.localeCompare(a.created_at)).slice(0, SHOWN);
}

function outcomeCell(a) {
  if (a.outcome) return h('span', { class: `status s-${a.outcome.status}` }, outcomeWords(a.outcome));
  if (REFUSED.has(a.decision) || a.tool === 'network') return h('span', { class: 'muted' }, 'not run');
  return h('span', { class: 'muted' }, 'not finished yet');
}

function row(a) {
  return h('tr', { dataset: { token: a.token, decision: a.decision, outcome: a.outcome?.status ?? '' } },
    h('td', { title: a.decided_at }, when(a.decided_at)),
    h('td', {}, h('span', { class: `tool t-${a.tool}` }, a.tool), ' ', h('code', { class: 'target' }, a.target),
      h('span', { class: 'muted small' }, ` · command ${a.command_id}`)),
    h('td', {}, h('span', { class: `decision d-${a.decision}` }, label(a.decision))),
    h('td', { class: 'decided-by' }, a.decided_by),
    h('td', { class: 'why' }, a.reason ?? ''),
    h('td', { class: 'outcome' }, outcomeCell(a)),
    h('td', {}, a.job_id ? h('a', { href: `#/jobs/${a.job_id}` }, a.job_id) : h('span', { class: 'muted' }, `session ${a.session_id}`)));
}

function filterForm(f) {
  const input = ([name, text, hint]) => h('p', { class: 'field' }, h('label', { for: `f-${name}` }, text),
    h('input', { id: `f-${name}`, name, value: f[name], placeholder: hint, autocomplete: 'off', spellcheck: 'false' }));
  const decision = h('select', { id: 'f-decision', name: 'decision' }, DECISIONS.map((d) => h('option', { value: d, selected: d === f.decision }, d ? label(d) : 'any')));
  const since = h('input', { id: 'f-since', name: 'since', type: 'datetime-local', value: f.since });
  const form = h('form', { class: 'filters', id: 'decided-filters', role: 'search', 'aria-label': 'Filter decided approvals' },
    FIELDS.map(input),
    h('p', { class: 'field' }, h('label', { for: 'f-decision' }, 'Decision'), decision),
    h('p', { class: 'field' }, h('label', { for: 'f-since' }, 'Asked since (local time)'), since),
    h('p', { class: 'field buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Apply'),
      h('button', { type: 'button', class: 'link', onclick: () => { location.hash = '#/decided'; } }, 'Clear filters')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (String(v).trim()) p.set(k, String(v).trim());
    const q = p.toString();
    location.hash = q ? `#/decided?${q}` : '#/decided';
  });
  return form;
}

export function decidedView(root, { me }) {
  clear(root, h('h1', { tabindex: '-1' }, 'Decided approvals'));
  if (me.role !== 'operator' && me.role !== 'admin') {
    root.append(h('p', { class: 'notice' }, `Decisions are listed for operators. Your key (${me.name}) is a submitter: each job page shows who decided its commands.`));
    return { stop() {} };
  }
  const f = decidedFilters();
  const status = h('p', { id: 'decided-status', class: 'muted', role: 'status' }, 'Loading…');
  const body = h('tbody', {});
  const head = ['Decided', 'Command', 'Decision', 'By', 'Why', 'Outcome', 'Job'].map((t) => h('th', { scope: 'col' }, t));
  root.append(h('p', { class: 'muted small' }, 'Answered and expired approvals of the last 7 days, newest first, with what each command then did.'),
    filterForm(f), status,
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Decided approvals' },
      h('table', { class: 'decided' }, h('caption', { class: 'sr-only' }, 'Decided approvals'), h('thead', {}, h('tr', {}, head)), body)));
  const started = Date.now();
  let timer = null;
  let stopped = false;
  const refresh = async () => {
    try {
      const rows = await load(f);
      if (stopped) return;
      clear(body, rows.map(row));
      status.textContent = rows.length ? `${rows.length} shown${rows.length === SHOWN ? ` (the newest ${SHOWN})` : ''}.` : 'No decided approvals match these filters.';
      // An approved command still running gets its outcome by itself, for a while.
      const waiting = rows.some((a) => !a.outcome && !REFUSED.has(a.decision) && a.tool !== 'network');
      if (waiting && Date.now() - started < REFRESH_FOR_MS) timer = setTimeout(refresh, REFRESH_MS);
    } catch (err) {
      if (!stopped) status.textContent = words(err);
    }
  };
  refresh();
  return { stop() { stopped = true; clearTimeout(timer); } };
}
