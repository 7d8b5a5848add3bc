// The jobs list (GET /v1/jobs/events: a snapshot, then each job as it changes)
// and a job page: its events live (resumed with Last-Event-ID after a drop),
// the ledger filterable by status, the workspace files, and its approvals
// with who decided them.
import { api, connectionWords, stream, words } from './api.js';
import { age, clear, h, when } from './dom.js';

const COUNTS = ['succeeded', 'failed', 'skipped', 'forbidden', 'rejected'];
const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

function countsText(c) {
  const parts = COUNTS.filter((k) => c[k] > 0).map((k) => `${c[k]} ${k}`);
  return `${c.total} total${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

export function jobsListView(root, { setConn }) {
  const body = h('tbody', {});
  const empty = h('p', { class: 'muted' }, 'No jobs yet.');
  clear(root, h('h1', {}, 'Jobs'), empty, h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'scrollable table' }, h('table', { class: 'jobs' },
    h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
    h('thead', {}, h('tr', {}, ['Job', 'Status', 'Task', 'Turns', 'API calls', 'Commands', 'Age'].map((t) => h('th', { scope: 'col' }, t)))),
    body)));
  const rows = new Map();
  const row = (j) => h('tr', { dataset: { job: j.job_id, status: j.status } },
    h('td', {}, h('a', { href: `#/jobs/${j.job_id}` }, j.job_id)),
    h('td', {}, h('span', { class: `status s-${j.status}` }, j.status.replace('_', ' '))),
    h('td', { class: 'task' }, j.task.length > 120 ? `${j.task.slice(0, 120)}…` : j.task),
    h('td', { class: 'num' }, String(j.turns)), h('td', { class: 'num' }, String(j.api_calls)),
    h('td', {}, countsText(j.commands)), h('td', { class: 'age', dataset: { created: j.created_at } }, age(j.created_at)));
  const put = (j) => {
    const el = row(j);
    const old = rows.get(j.job_id);
    if (old) old.replaceWith(el);
    else {
      const after = [...body.children].find((x) => x.querySelector('.age').dataset.created < j.created_at);
      body.insertBefore(el, after ?? null);
    }
    rows.set(j.job_id, el);
    empty.hidden = true;
  };
  const timer = setInterval(() => { for (const td of body.querySelectorAll('.age')) td.textContent = age(td.dataset.created); }, 10_000);
  const stop = stream('/v1/jobs/events', {
    onStatus: (s) => setConn(connectionWords('Jobs', s)),
    onEvent: (type, data) => {
      if (type === 'snapshot') data.jobs.forEach(put);
      else if (type === 'job') put(data);
    },
  });
  return { stop() { stop(); clearInterval(timer); } };
}

export function jobView(root, jobId, { me, setConn }) {
  const figures = h('dl', { class: 'figures' });
  const log = h('ol', { class: 'events', id: 'event-log', tabindex: '0', 'aria-label': 'Events', dataset: { lastSeq: '0', events: '0', missing: '0', reconnects: '0' } });
  const ledgerBody = h('tbody', {});
  const filter = h('select', { id: 'ledger-filter' }, ['all', 'queued', 'awaiting_approval', 'running', 'succeeded', 'failed', 'skipped', 'forbidden', 'rejected', 'interrupted'].map((s) => h('option', { value: s }, s)));
  const approvalsBody = h('tbody', {});
  const files = h('div', { class: 'files' });
  const error = h('p', { class: 'error', role: 'alert' });
  clear(root,
    h('p', {}, h('a', { href: '#/jobs' }, '← All jobs')),
    h('h1', {}, `Job ${jobId}`), error, figures,
    h('section', { 'aria-labelledby': 'ev-h' }, h('h2', { id: 'ev-h' }, 'Events (live)'), log),
    h('section', { 'aria-labelledby': 'ap-h' }, h('h2', { id: 'ap-h' }, 'Approvals'), h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'scrollable table' }, h('table', { class: 'approvals' },
      h('thead', {}, h('tr', {}, ['Command', 'Tool', 'Target', 'Decision', 'Decided by', 'At', 'Reason'].map((t) => h('th', { scope: 'col' }, t)))), approvalsBody))),
    h('section', { 'aria-labelledby': 'le-h' }, h('h2', { id: 'le-h' }, 'Ledger'),
      h('p', {}, h('label', { for: 'ledger-filter' }, 'Show status '), filter),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'scrollable table' }, h('table', { class: 'ledger' },
        h('thead', {}, h('tr', {}, ['#', 'Turn', 'Command', 'Tool', 'Target', 'Decision', 'Status', 'Result'].map((t) => h('th', { scope: 'col' }, t)))), ledgerBody))),
    h('section', { 'aria-labelledby': 'fi-h' }, h('h2', { id: 'fi-h' }, 'Workspace files'), files));

  let job = null;
  let ledger = [];
  const seen = new Set();
  let textLi = null;

  const showFigures = () => clear(figures, ...[
    ['Status', job.status], ['Task', job.task], ['Approval mode', job.approval], ['Turns', job.turns], ['API calls', job.api_calls],
    ['Commands', countsText(job.commands)], ['Created', when(job.created_at)], ['Finished', when(job.finished_at) || '—'],
    job.error ? ['Error', job.error] : null,
  ].filter(Boolean).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { class: k === 'Status' ? `status s-${v}` : null, dataset: k === 'Status' ? { field: 'status' } : {} }, String(v))]));

  const renderLedger = () => {
    const f = filter.value;
    clear(ledgerBody, ledger.filter((r) => f === 'all' || r.status === f).map((r) => h('tr', { dataset: { status: r.status, id: r.id } },
      h('td', {}, String(r.index)), h('td', {}, String(r.turn)), h('td', {}, r.id), h('td', {}, r.tool),
      h('td', {}, h('code', {}, r.cmd ?? (r.dest ? `${r.path} -> ${r.dest}` : r.path ?? ''))),
      h('td', {}, h('span', { class: `decision d-${r.decision}` }, r.decision)),
      h('td', {}, h('span', { class: `status s-${r.status}` }, r.status)),
      h('td', { class: 'small' }, r.error ?? r.output_summary ?? (r.exit_code !== null ? `exit ${r.exit_code}` : '')))));
    clear(approvalsBody, ledger.filter((r) => r.approval).map((r) => h('tr', { dataset: { id: r.id } },
      h('td', {}, r.id), h('td', {}, r.tool), h('td', {}, h('code', {}, r.cmd ?? r.path ?? '')),
      h('td', {}, r.approval.decision ?? 'pending'), h('td', { class: 'decided-by' }, r.approval.decided_by ?? '—'),
      h('td', {}, when(r.approval.decided_at)), h('td', {}, r.approval.reason ?? ''))));
  };
  filter.addEventListener('change', renderLedger);

  let refreshing = null;
  const refresh = () => {
    // At most one refresh in flight, plus one after it: bursts of events cost two reads.
    if (refreshing) { refreshing.again = true; return; }
    refreshing = { again: false };
    Promise.all([api(`/v1/jobs/${jobId}`), job ? api(`/v1/sessions/${job.session_id}/ledger`) : null])
      .then(async ([j, l]) => {
        job = j;
        ledger = l?.entries ?? (await api(`/v1/sessions/${j.session_id}/ledger`)).entries;
        showFigures();
        renderLedger();
      })
      .catch((err) => { error.textContent = words(err); })
      .finally(() => { const again = refreshing.again; refreshing = null; if (again) refresh(); });
  };

  const line = (type, e, text) => h('li', { class: `ev ev-${type}`, dataset: { seq: String(e.seq) } },
    h('span', { class: 'muted small' }, `#${e.seq} ${when(e.at)} `), text);
  const describe = (type, e) => {
    const c = e.command ?? e.record ?? {};
    const target = c.target ?? c.cmd ?? c.path ?? '';
    switch (type) {
      case 'turn_started': return `turn ${e.turn ?? ''} started`;
      case 'command_parsed': return ['command parsed: ', h('code', {}, `${e.command?.tool ?? ''} ${e.command?.cmd ?? e.command?.path ?? ''}`)];
      case 'command_queued': return ['queued ', h('code', {}, `${c.id} ${c.tool} ${target}`)];
      case 'command_started': return ['started ', h('code', {}, `${c.id} ${c.tool} ${target}`)];
      case 'command_finished': return ['finished ', h('code', {}, `${c.id} ${c.tool}`), ` → ${c.status}${c.error ? `: ${c.error}` : ''}`];
      case 'approval_requested': return ['approval requested for ', h('code', {}, `${e.approval?.command_id} ${e.approval?.tool} ${e.approval?.target}`)];
      case 'approval_resolved': return [`approval for command ${e.approval?.command_id}: ${e.approval?.decision ?? e.approval?.status} by ${e.approval?.decided_by ?? 'system'}`, e.approval?.reason ? ` (${e.approval.reason})` : ''];
      case 'parse_error': return `parse error ${e.code ?? ''}: ${e.message ?? ''}`;
      case 'turn_ended': return `turn ${e.turn ?? ''} ended${e.outcome ? ` (${e.outcome})` : ''}`;
      case 'job_finished': return `job finished: ${e.job?.status ?? ''}${e.job?.error ? ` (${e.job.error})` : ''}`;
      case 'gap': return `events before #${e.first_seq} are no longer kept`;
      default: return type.replace(/_/g, ' ');
    }
  };

  const onEvent = (type, e) => {
    const seq = Number(e.seq);
    if (seen.has(seq)) return;
    const last = Number(log.dataset.lastSeq);
    if (type !== 'gap' && seq > last + 1) log.dataset.missing = String(Number(log.dataset.missing) + (seq - last - 1));
    seen.add(seq);
    log.dataset.lastSeq = String(Math.max(last, seq));
    log.dataset.events = String(seen.size);
    if (type === 'reasoning_delta') return;
    if (type === 'text_delta') {
      if (!textLi) { textLi = line('text', e, ''); textLi.append(h('span', { class: 'text' })); log.append(textLi); }
      textLi.querySelector('.text').append(e.delta ?? e.text ?? '');
      return;
    }
    textLi = null;
    log.append(line(type, e, describe(type, e)));
    if (['command_finished', 'approval_requested', 'approval_resolved', 'turn_ended', 'job_finished', 'command_queued', 'turn_started'].includes(type)) refresh();
    if (type === 'command_finished' || type === 'job_finished') loadDir(cwd);
  };

  let cwd = '';
  async function loadDir(path) {
    if (!job) return;
    cwd = path;
    try {
      const res = await api(`/v1/sessions/${job.session_id}/files/${path.split('/').map(encodeURIComponent).join('/')}`, { raw: true });
      if (!(res.headers.get('content-type') ?? '').includes('json')) return showFile(path, await res.text());
      const { entries } = await res.json();
      const up = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
      clear(files, h('p', {}, 'Folder ', h('code', {}, `/workspace/${path}`)), h('ul', { class: 'dir' },
        path ? h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => loadDir(up) }, '.. (up)')) : null,
        entries.length === 0 ? h('li', { class: 'muted' }, 'empty') : null,
        entries.map((en) => h('li', {}, h('button', { type: 'button', class: 'link', onclick: () => loadDir(path ? `${path}/${en.name}` : en.name) },
          en.type === 'dir' ? `${en.name}/` : en.name), en.type === 'dir' ? '' : h('span', { class: 'muted small' }, ` ${en.size} bytes`)))));
    } catch (err) {
      clear(files, h('p', { class: 'error' }, words(err)));
    }
  }
  function showFile(path, text) {
    const up = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    clear(files, h('p', {}, h('button', { type: 'button', class: 'link', onclick: () => loadDir(up) }, '← back to folder'), ' File ', h('code', {}, `/workspace/${path}`)),
      h('pre', { class: 'code file', tabindex: '0', 'aria-label': `contents of ${path}` }, text));
  }

  let stop = () => {};
  api(`/v1/jobs/${jobId}`).then((j) => {
    job = j;
    showFigures();
    refresh();
    loadDir('');
    stop = stream(`/v1/jobs/${jobId}/events`, {
      resume: true,
      done: (type) => type === 'job_finished',
      onStatus: (s) => {
        if (s.state === 'reconnecting') log.dataset.reconnects = String(Number(log.dataset.reconnects) + 1);
        setConn(connectionWords(`Job ${jobId}`, s));
      },
      onEvent,
    });
  }).catch((err) => { error.textContent = words(err); });
  void me;
  return { stop: () => stop() };
}

export { FINAL };
