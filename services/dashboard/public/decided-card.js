// A card decided here or by another operator does not vanish at once: for a
// few seconds it says what was decided, by whom, when and why, and, when the
// command finishes within that time, what it did (its outcome from
// GET /v1/approvals?status=decided). It stops being a `.card` at once: no
// button is left on it, and selection and J/K skip it.
import { api, words } from './api.js';
import { clear, h, when } from './dom.js';
import { label } from './labels.js';

/** How long the decision (and then the outcome) stays on screen. */
const SHOW_MS = 4000;
/** How long to wait for the command's outcome (a paused sandbox resumes first); a slower one is told on the job page and in Decided. */
const OUTCOME_WAIT_MS = 10_000;
const POLL_MS = 400;
/** Decisions after which the command does not run. */
const REFUSED = new Set(['reject', 'expired']);

/** The outcome in words: "succeeded, exit code 0", "failed, exit code 1: …". */
export function outcomeWords(o) {
  if (!o) return '';
  return `${label(o.status)}${o.exit_code !== undefined ? `, exit code ${o.exit_code}` : ''}${o.error ? `: ${o.error}` : ''}`;
}

/** `approval`: the answer (token, decision, decided_by, decided_at, reason?); `gone()` runs once the notice has left. */
export function leaveDecided(el, approval, gone) {
  const decision = approval.decision ?? approval.status;
  const what = el.querySelector('h3')?.textContent ?? `${el.dataset.tool ?? ''} command`;
  const outcome = h('p', { class: 'decided-outcome', role: 'status' }, REFUSED.has(decision) ? 'The command does not run.' : 'Waiting for the command to finish…');
  el.className = `card-decided d-${decision}`;
  for (const a of ['tabindex', 'aria-labelledby', 'aria-describedby']) el.removeAttribute(a);
  el.setAttribute('aria-label', `Decided: ${what}`);
  clear(el,
    h('p', { class: 'decided-what' }, h('strong', {}, label(decision)), ' ', h('code', {}, what)),
    h('p', { class: 'muted small' }, `by ${approval.decided_by ?? 'someone'} at ${when(approval.decided_at)}`, approval.reason ? ` · why: ${approval.reason}` : ''),
    outcome);
  let leaveAt = Date.now() + SHOW_MS;
  const started = Date.now();
  const tick = async () => {
    if (!el.isConnected) return gone();
    if (!REFUSED.has(decision) && !el.dataset.outcome) {
      if (Date.now() - started >= OUTCOME_WAIT_MS) outcome.textContent = 'Still running: its outcome will be on the job page and under Decided.';
      else {
        try {
          const found = await outcomeOf(approval);
          if (found) {
            el.dataset.outcome = found.status;
            outcome.textContent = `Outcome: ${outcomeWords(found)}`;
            leaveAt = Date.now() + SHOW_MS;
          }
        } catch (err) {
          el.dataset.outcome = 'unknown';
          outcome.textContent = `The outcome could not be read: ${words(err)}`;
        }
      }
    }
    if (Date.now() >= leaveAt) { el.remove(); gone(); return; }
    setTimeout(tick, POLL_MS);
  };
  setTimeout(tick, POLL_MS);
}

async function outcomeOf(a) {
  const q = new URLSearchParams({ status: 'decided', session_id: a.session_id, limit: '20' });
  const { approvals } = await api(`/v1/approvals?${q}`);
  return approvals.find((x) => x.token === a.token)?.outcome ?? null;
}
