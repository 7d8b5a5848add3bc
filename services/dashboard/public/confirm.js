// The one confirmation dialog: it lists every item it will decide (never a
// blind "approve all"), shows a grant's scope in words before it is given,
// takes a reject reason, then runs the items in order and reports each one.
import { api, ApiError, words } from './api.js';
import { h, when } from './dom.js';
import { label } from './labels.js';

const LABEL = { approve: 'Approve', approve_for_session: 'Approve for session', reject: 'Reject' };

/** The words for a refused answer: "already decided by NAME at TIME", expired, or the API's error. */
export function refusal(err) {
  if (err instanceof ApiError && err.status === 409) {
    const d = err.details ?? {};
    if (d.status === 'expired') return 'This approval expired before the answer arrived: the command was not run.';
    if (d.decided_by) return `Already decided by ${d.decided_by} at ${when(d.decided_at)} (${label(d.decision ?? d.status)}).`;
  }
  return words(err);
}

/** Sends one answer. Resolves {ok: true, approval} (the approval as answered) or {ok: false, message}. */
export async function answer(card, decision, reason) {
  try {
    const res = await api(`/v1/approvals/${encodeURIComponent(card.token)}`, { method: 'POST', body: reason ? { decision, reason } : { decision } });
    return { ok: true, approval: res.approval };
  } catch (err) {
    return { ok: false, message: refusal(err) };
  }
}

/**
 * Opens the dialog for `cards` (in order) and `decision`; resolves when it
 * closes with the per-item outcomes (empty when cancelled).
 */
export function confirmDecision(cards, decision, { onDone } = {}) {
  const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-h' });
  const reason = decision === 'reject' ? h('textarea', { id: 'confirm-reason', rows: '3', placeholder: 'What should the agent do instead?' }) : null;
  const items = cards.map((c, i) => h('li', { class: 'item', dataset: { token: c.token } },
    h('span', { class: `tool t-${c.tool}` }, c.tool), ' ', h('code', {}, c.target),
    h('span', { class: 'muted' }, ` (command ${c.command_id} of ${c.job_id ?? c.session_id})`),
    decision === 'approve_for_session' ? h('p', { class: 'grant' }, h('strong', {}, 'Grant: '), c.grant.words) : null,
    h('p', { class: 'outcome', role: 'status' })));
  const confirmBtn = h('button', { type: 'submit', class: decision === 'reject' ? 'danger' : 'primary' }, `${LABEL[decision]} ${cards.length > 1 ? `these ${cards.length}` : 'this command'}`);
  const cancelBtn = h('button', { type: 'button', onclick: () => dlg.close() }, 'Cancel');
  const form = h('form', { method: 'dialog' },
    h('h2', { id: 'confirm-h' }, `${LABEL[decision]}: ${cards.length} command${cards.length > 1 ? 's' : ''}, in this order`),
    h('ol', { class: 'confirm-items' }, items),
    reason ? [h('label', { for: 'confirm-reason' }, 'Reason (sent to the agent)'), reason] : null,
    h('div', { class: 'actions' }, confirmBtn, cancelBtn));
  dlg.append(form);
  document.body.append(dlg);
  const results = [];
  const from = document.activeElement;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      dlg.remove();
      // Back where the person was; its card may have left meanwhile (then the view moves focus).
      if (from?.isConnected) from.focus();
      resolve(results);
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (confirmBtn.dataset.ran) { dlg.close(); return; }
      confirmBtn.disabled = true;
      // One after the other, in the listed order: the session's queue runs them in its own order anyway.
      for (let i = 0; i < cards.length; i++) {
        const out = await answer(cards[i], decision, reason?.value.trim() || undefined);
        results.push(out);
        const li = items[i];
        li.classList.add(out.ok ? 'done' : 'refused');
        li.querySelector('.outcome').textContent = out.ok ? 'Done.' : out.message;
      }
      onDone?.(cards, results);
      if (results.every((r) => r.ok)) { dlg.close(); return; }
      confirmBtn.dataset.ran = '1';
      confirmBtn.disabled = false;
      confirmBtn.textContent = 'Close';
      cancelBtn.hidden = true;
      confirmBtn.focus();
    });
    dlg.showModal();
    (reason ?? confirmBtn).focus();
  });
}
