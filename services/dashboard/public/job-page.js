// A job page: its figures, its events live (resumed with Last-Event-ID after
// a drop), its approvals with who decided, the ledger filterable by status,
// and the workspace files.
import { ApiError, api, stream, words } from './api.js';
import { clear, h, when } from './dom.js';
import { countsText } from './jobs.js';
import { jobActions } from './job-actions.js';
import { label } from './labels.js';
import { TOOLS } from './tools.js';

/** A ledger record's target as the service shows it: the cmd, or the tool's path fields joined by ` -> `. */
const targetText = (r) => r.cmd ?? (TOOLS[r.tool]?.paths ?? [{ name: 'path' }]).map((p) => r[p.name] ?? '').join(' -> ');

const STATUSES = ['all', 'queued', 'awaiting_approval', 'running', 'succeeded', 'failed', 'skipped', 'forbidden', 'rejected', 'interrupted'];
/** Events after which the figures and the ledger are read again. */
const REFRESH_ON = new Set(['command_finished', 'approval_requested', 'approval_resolved', 'turn_ended', 'job_finished', 'command_queued', 'turn_started', 'validation_finished']);

/** A table that may scroll sideways, in a focusable region named after it (each region's name must differ). */
const tableWrap = (name, table) => h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': name }, table);
const head = (cols) => h('thead', {}, h('tr', {}, cols.map((t) => h('th', { scope: 'col' }, t))));

function describe(type, e) {
  const c = e.command ?? e.record ?? {};
  const target = c.target ?? c.cmd ?? c.path ?? '';
  const a = e.approval ?? {};
  switch (type) {
    case 'turn_started': return `turn ${e.turn ?? ''} started`;
    case 'command_parsed': return ['command parsed: ', h('code', {}, `${c.tool ?? ''} ${c.cmd ?? c.path ?? ''}`)];
    case 'command_queued': return ['queued ', h('code', {}, `${c.id} ${c.tool} ${target}`)];
    case 'command_started': return ['started ', h('code', {}, `${c.id} ${c.tool} ${target}`)];
    case 'command_finished': return ['finished ', h('code', {}, `${c.id} ${c.tool}`), ` → ${label(c.status)}${c.error ? `: ${c.error}` : ''}`];
    case 'approval_requested': return ['approval requested for ', h('code', {}, `${a.command_id} ${a.tool} ${a.target}`)];
    case 'approval_resolved': return [`approval for command ${a.command_id}: ${label(a.decision ?? a.status)} by ${a.decided_by ?? 'system'}`, a.reason ? ` (${a.reason})` : ''];
    case 'parse_error': return `parse error ${e.code ?? ''}: ${e.message ?? ''}`;
    case 'turn_ended': return `turn ${e.turn ?? ''} ended${e.outcome ? ` (${e.outcome})` : ''}`;
    case 'validation_started': return ['validation round ', `${e.round}/${e.max_rounds}: `, h('code', {}, e.cmd ?? '')];
    case 'validation_finished': return `validation round ${e.round}/${e.max_rounds} ${e.passed ? 'passed' : `failed (${e.status}${e.exit_code != null ? `, exit ${e.exit_code}` : ''})`}`;
    case 'job_finished': return `job finished: ${label(e.job?.status)}${e.job?.error ? ` (${e.job.error})` : ''}`;
    case 'gap': return `events before #${e.first_seq} are no longer kept`;
    default: return type.replace(/_/g, ' ');
  }
}

/**
 * The live event list. Its data attributes say what it received: distinct
 * events, the last seq, holes in the seq order and reconnects.
 */
function eventLog() {
  const el = h('ol', { class: 'events', id: 'event-log', tabindex: '0', 'aria-label': 'Events', dataset: { lastSeq: '0', events: '0', missing: '0', reconnects: '0' } });
  const seen = new Set();
  let textLi = null;
  const line = (type, e, text) => h('li', { class: `ev ev-${type}`, dataset: { seq: String(e.seq) } }, h('span', { class: 'muted small' }, `#${e.seq} ${when(e.at)} `), text);
  // The box follows new events, unless the person scrolled up to read (then it stays put).
  const follow = (change) => {
    const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    change();
    if (atEnd) el.scrollTop = el.scrollHeight;
  };
  return {
    el,
    reconnected() { el.dataset.reconnects = String(Number(el.dataset.reconnects) + 1); },
    /** false for an event already shown (a replay after a reconnect). */
    add(type, e) {
      const seq = Number(e.seq);
      if (seen.has(seq)) return false;
      const last = Number(el.dataset.lastSeq);
      if (type !== 'gap' && seq > last + 1) el.dataset.missing = String(Number(el.dataset.missing) + (seq - last - 1));
      seen.add(seq);
      el.dataset.lastSeq = String(Math.max(last, seq));
      el.dataset.events = String(seen.size);
      if (type === 'reasoning_delta') return true;
      if (type === 'text_delta') {
        // Visible text as it arrives, one block per run of deltas.
        follow(() => {
          if (!textLi) { textLi = line('text', e, ''); textLi.append(h('span', { class: 'text' })); el.append(textLi); }
          textLi.querySelector('.text').append(e.text ?? '');
        });
        return true;
      }
      textLi = null;
      follow(() => el.append(line(type, e, describe(type, e))));
      return true;
    },
  };
}

/** Where a command's time went, from its timings: parse → queue, queue → start (wait), start → finish (run). */
export function timingsText(t) {
  if (!t) return '';
  const ms = (a, b) => (a && b ? Math.max(0, Date.parse(b) - Date.parse(a)) : null);
  const parts = [['admitted', ms(t.parsed_at, t.queued_at)], ['waited', ms(t.queued_at, t.started_at)], ['ran', ms(t.started_at, t.finished_at)]];
  return parts.filter(([, v]) => v !== null).map(([k, v]) => `${k} ${v} ms`).join(' · ');
}

/** The ledger (filterable by status) and the approvals decided in it. */
function ledgerTables() {
  const filter = h('select', { id: 'ledger-filter' }, STATUSES.map((s) => h('option', { value: s }, label(s))));
  const ledgerBody = h('tbody', {});
  const approvalsBody = h('tbody', {});
  let ledger = [];
  const render = () => {
    const f = filter.value;
    clear(ledgerBody, ledger.filter((r) => f === 'all' || r.status === f).map((r) => h('tr', { dataset: { status: r.status, id: r.id } },
      h('td', {}, String(r.index)), h('td', {}, String(r.turn)), h('td', {}, r.id), h('td', {}, r.tool),
      h('td', {}, h('code', {}, targetText(r))),
      h('td', {}, h('span', { class: `decision d-${r.decision}` }, r.decision)),
      h('td', {}, h('span', { class: `status s-${r.status}` }, label(r.status))),
      h('td', { class: 'small' }, r.error ?? r.output_summary ?? (r.exit_code !== null ? `exit ${r.exit_code}` : '')),
      h('td', { class: 'small timings', title: Object.entries(r.timings ?? {}).map(([k, v]) => `${k} ${v}`).join('\n') }, timingsText(r.timings)))));
    clear(approvalsBody, ledger.filter((r) => r.approval).map((r) => h('tr', { dataset: { id: r.id } },
      h('td', {}, r.id), h('td', {}, r.tool), h('td', {}, h('code', {}, targetText(r))),
      h('td', {}, label(r.approval.decision ?? 'pending')), h('td', { class: 'decided-by' }, r.approval.decided_by ?? '—'),
      h('td', {}, when(r.approval.decided_at)), h('td', {}, r.approval.reason ?? ''))));
  };
  filter.addEventListener('change', render);
  return {
    approvals: tableWrap('Approvals of this job', h('table', { class: 'approvals' }, head(['Command', 'Tool', 'Target', 'Decision', 'Decided by', 'At', 'Reason']), approvalsBody)),
    ledger: [h('p', {}, h('label', { for: 'ledger-filter' }, 'Show status '), filter),
      tableWrap('Ledger of this job', h('table', { class: 'ledger' }, head(['#', 'Turn', 'Command', 'Tool', 'Target', 'Decision', 'Status', 'Result', 'Time']), ledgerBody))],
    show(entries) { ledger = entries; render(); },
  };
}

/** Browse the workspace: folders as lists of buttons, a file as plain text. */
function filesBrowser(sessionId) {
  const el = h('div', { class: 'files' });
  let cwd = '';
  const parent = (path) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');
  const open = async (path) => {
    try {
      const res = await api(`/v1/sessions/${sessionId}/files/${path.split('/').map(encodeURIComponent).join('/')}`, { raw: true });
      if (!(res.headers.get('content-type') ?? '').includes('json')) {
        const text = await res.text();
        clear(el, h('p', {}, h('button', { type: 'button', class: 'link', onclick: () => open(parent(path)) }, '← back to folder'), ' File ', h('code', {}, `/workspace/${path}`)),
          h('pre', { class: 'code file', tabindex: '0', 'aria-label': `contents of ${path}` }, text));
        return;
      }
      cwd = path;
      const { entries } = await res.json();
      clear(el, h('p', {}, 'Folder ', h('code', {}, `/workspace/${path}`)), h('ul', { class: 'dir' },
        path ? h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => open(parent(path)) }, '.. (up)')) : null,
        entries.length === 0 ? h('li', { class: 'muted' }, 'empty') : null,
        entries.map((en) => h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => open(path ? `${path}/${en.name}` : en.name) },
          en.type === 'dir' ? `${en.name}/` : en.name), en.type === 'dir' ? '' : h('span', { class: 'muted small' }, ` ${en.size} bytes`)))));
    } catch (err) {
      clear(el, h('p', { class: 'error' }, words(err)));
    }
  };
  // A file being read stays open; a folder listing follows new files.
  return { el, open, refresh: () => { if (!el.querySelector('pre.file')) open(cwd); } };
}

const OPEN = ['running', 'awaiting_approval', 'queued'];
const FINAL_JOB = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Turns and commands as the ledger on the same page shows them: the job view
 * counts a turn when it ends and a command when it finishes, so a job waiting
 * mid-turn would read "Turns 0, 0 total" next to its queued rows.
 */
function progress(job, entries) {
  if (!entries) return { turns: String(job.turns), commands: countsText(job.commands) };
  // The job's own commands, as the job view counts them: REST and validator ones are not the model's.
  const own = entries.filter((r) => r.flow !== 'api' && r.flow !== 'validator');
  const seen = Math.max(job.turns, ...own.map((r) => r.turn ?? 0));
  const turns = seen > job.turns && !FINAL_JOB.has(job.status) ? `${seen} (turn ${seen} in progress)` : String(job.turns);
  const counts = { total: own.length, succeeded: 0, failed: 0, skipped: 0, forbidden: 0, rejected: 0 };
  for (const r of own) if (r.status in counts) counts[r.status]++; else if (r.status === 'interrupted') counts.failed++;
  const open = OPEN.map((s) => [s, own.filter((r) => r.status === s).length]).filter(([, n]) => n > 0).map(([s, n]) => `${n} ${label(s)}`);
  const done = countsText(counts);
  return { turns, commands: open.length ? `${done}${done.includes(':') ? ', ' : ': '}${open.join(', ')}` : done };
}

export function jobView(root, jobId, { setLink, me }) {
  const actions = jobActions(jobId, me); // operators: decide its approvals, cancel it
  const figures = h('dl', { class: 'figures' });
  const error = h('p', { class: 'error', role: 'alert' });
  const log = eventLog();
  const tables = ledgerTables();
  const section = (id, title, ...body) => h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...body);
  const filesSlot = h('div', {});
  clear(root, h('p', {}, h('a', { href: '#/jobs' }, '← All jobs')), h('h1', {}, `Job ${jobId}`), error, figures, actions.el,
    section('ev-h', 'Events (live)', log.el), section('ap-h', 'Approvals', tables.approvals),
    section('le-h', 'Ledger', tables.ledger), section('fi-h', 'Workspace files', filesSlot));

  const showFigures = (job, entries) => {
    const p = progress(job, entries);
    clear(figures, ...[
      ['Status', label(job.status)], ['Task', job.task], ['Approval mode', job.approval], ['Turns', p.turns], ['API calls', job.api_calls],
      ['Commands', p.commands], ['Created', when(job.created_at)], ['Finished', when(job.finished_at) || '—'],
      job.error ? ['Error', job.error] : null,
    ].filter(Boolean).flatMap(([k, v]) => [h('dt', {}, k), h('dd', k === 'Status' ? { class: `status s-${job.status}` } : { dataset: { fig: k.toLowerCase() } }, String(v))]));
  };

  let refreshing = null;
  const refresh = (job) => {
    // At most one refresh in flight, plus one after it: a burst of events costs two reads.
    if (refreshing) { refreshing.again = true; return; }
    refreshing = { again: false };
    Promise.all([api(`/v1/jobs/${jobId}`), api(`/v1/sessions/${job.session_id}/ledger`)])
      .then(([j, l]) => { showFigures(j, l.entries); tables.show(l.entries); actions.update(j); })
      .catch((err) => { error.textContent = words(err); })
      .finally(() => { const again = refreshing.again; refreshing = null; if (again) refresh(job); });
  };

  let stop = () => {};
  let stopped = false;
  api(`/v1/jobs/${jobId}`).then((job) => {
    if (stopped) return;
    showFigures(job);
    refresh(job);
    const files = filesBrowser(job.session_id);
    filesSlot.replaceWith(files.el);
    files.open('');
    stop = stream(`/v1/jobs/${jobId}/events`, {
      resume: true,
      done: (type) => type === 'job_finished',
      onStatus: (s) => {
        if (s.state === 'reconnecting') log.reconnected();
        setLink(`Job ${jobId}`, s);
      },
      onEvent: (type, e) => {
        if (!log.add(type, e)) return;
        if (REFRESH_ON.has(type)) refresh(job);
        if (type === 'command_finished' || type === 'job_finished') files.refresh();
      },
    });
  }).catch((err) => {
    if (stopped) return;
    // No job to show (none, or not this key's): say so, without the empty sections of a job.
    const missing = err instanceof ApiError && err.status === 404;
    clear(root, h('p', {}, h('a', { href: '#/jobs' }, '← All jobs')), h('h1', {}, missing ? 'No such job' : `Job ${jobId}`),
      missing
        ? h('p', { class: 'notice', id: 'no-such-job' }, `There is no job ${jobId} that this key can see: the link may be mistyped, or the job belongs to another key or was deleted.`)
        : h('p', { class: 'error', role: 'alert' }, words(err)));
  });
  return { stop: () => { stopped = true; stop(); } };
}
