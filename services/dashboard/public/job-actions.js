// What an operator can do from a job page: decide the job's own pending
// approvals (Approve, Reject… with a reason) and cancel the job, after a
// confirmation. Operators and admins only: a submitter's page has none of it
// (the API would refuse them anyway). The job page calls `update(job)`
// whenever its figures are read again.
import { api, words } from './api.js';
import { answer, confirmDecision } from './confirm.js';
import { clear, h, when } from './dom.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Asks before cancelling; resolves true when the person confirmed. */
function confirmCancel(jobId) {
  const dlg = h('dialog', { class: 'confirm cancel-confirm', 'aria-labelledby': 'cancel-h' });
  const yes = h('button', { type: 'submit', class: 'danger' }, 'Cancel the job');
  const no = h('button', { type: 'button', onclick: () => dlg.close() }, 'Keep it running');
  let confirmed = false;
  dlg.append(h('form', { method: 'dialog' },
    h('h2', { id: 'cancel-h' }, `Cancel job ${jobId}?`),
    h('p', {}, 'The model stops, commands still queued are skipped and its pending approvals are withdrawn. A command already running finishes. This cannot be undone.'),
    h('div', { class: 'actions' }, yes, no)));
  dlg.querySelector('form').addEventListener('submit', () => { confirmed = true; });
  document.body.append(dlg);
  const from = document.activeElement;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => { dlg.remove(); if (from?.isConnected) from.focus(); resolve(confirmed); });
    dlg.showModal();
    no.focus();
  });
}

/** `me`: the signed-in key; returns `{el, update(job)}` (`el` null for a submitter). */
export function jobActions(jobId, me) {
  if (me?.role !== 'operator' && me?.role !== 'admin') return { el: null, update() {} };
  const list = h('ul', { class: 'job-pending', id: 'job-pending' });
  const status = h('p', { class: 'card-status', role: 'status' });
  const cancel = h('button', { type: 'button', class: 'danger cancel-job', onclick: () => cancelJob() }, 'Cancel job…');
  const el = h('section', { class: 'job-actions', 'aria-labelledby': 'ja-h' },
    h('h2', { id: 'ja-h' }, 'Waiting for a decision'), list,
    h('p', { class: 'actions' }, cancel, ' ', h('a', { href: `#/decided?job_id=${encodeURIComponent(jobId)}` }, 'Decided approvals of this job')),
    status);
  let reading = 0;

  const decided = (out) => {
    status.textContent = out.ok ? '' : out.message;
    update(null);
  };
  const item = (a) => h('li', { dataset: { token: a.token } },
    h('span', { class: `tool t-${a.tool}` }, a.tool), ' ', h('code', {}, a.target),
    h('span', { class: 'muted small' }, ` · command ${a.command_id} · asked ${when(a.created_at)} · expires ${when(a.expires_at)} `),
    h('button', { type: 'button', class: 'primary approve', onclick: async () => decided(await answer(a, 'approve')) }, 'Approve'), ' ',
    h('button', { type: 'button', class: 'danger reject', onclick: async () => {
      const [out] = await confirmDecision([a], 'reject');
      if (out) decided(out);
    } }, 'Reject…'));

  async function update(job) {
    if (job) cancel.hidden = FINAL.has(job.status);
    const n = ++reading;
    try {
      const { approvals } = await api(`/v1/approvals?status=pending&job_id=${encodeURIComponent(jobId)}`);
      if (n !== reading) return; // a later read is on its way
      clear(list, approvals.length ? approvals.map(item) : h('li', { class: 'muted' }, 'Nothing of this job waits for an operator.'));
    } catch (err) {
      if (n === reading) status.textContent = words(err);
    }
  }

  async function cancelJob() {
    if (!(await confirmCancel(jobId))) return;
    cancel.disabled = true;
    try {
      const job = await api(`/v1/jobs/${encodeURIComponent(jobId)}/cancel`, { method: 'POST' });
      status.textContent = `Cancel requested: the job is ${job.status}.`;
      update(job);
    } catch (err) {
      status.textContent = words(err);
    } finally {
      cancel.disabled = false;
    }
  }

  return { el, update };
}
