// The jobs list: GET /v1/jobs/events gives a snapshot, then each job's view
// whenever it is written, so rows update in place without polling.
import { stream } from './api.js';
import { age, clear, h } from './dom.js';
import { label } from './labels.js';

const COUNTS = ['succeeded', 'failed', 'skipped', 'forbidden', 'rejected'];

export function countsText(c) {
  const parts = COUNTS.filter((k) => c[k] > 0).map((k) => `${c[k]} ${k}`);
  return `${c.total} total${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

export function jobsListView(root, { setLink }) {
  const body = h('tbody', {});
  const empty = h('p', { class: 'muted' }, 'No jobs yet.');
  clear(root, h('h1', {}, 'Jobs'), empty, h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Jobs table' }, h('table', { class: 'jobs' },
    h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
    h('thead', {}, h('tr', {}, ['Job', 'Status', 'Task', 'Turns', 'API calls', 'Commands', 'Age'].map((t) => h('th', { scope: 'col' }, t)))),
    body)));
  const rows = new Map();
  const row = (j) => h('tr', { dataset: { job: j.job_id, status: j.status } },
    h('td', {}, h('a', { href: `#/jobs/${j.job_id}` }, j.job_id)),
    h('td', {}, h('span', { class: `status s-${j.status}` }, label(j.status))),
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
    onStatus: (s) => setLink('Jobs', s),
    onEvent: (type, data) => {
      if (type === 'snapshot') data.jobs.forEach(put);
      else if (type === 'job') put(data);
    },
  });
  return { stop() { stop(); clearInterval(timer); } };
}
