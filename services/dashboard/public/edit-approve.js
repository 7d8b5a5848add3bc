// "Edit, then approve" (approve_edited): the operator changes a pending bash
// command or a write/append's content and approves that instead, which saves
// the model call a rejection costs. The server judges the edit like any
// command: a forbidden edit is answered 400 and its message shown here, with
// the approval still pending (the operator may try again, or reject).
import { api } from './api.js';
import { refusal } from './confirm.js';
import { h } from './dom.js';
import { TOOLS } from './tools.js';

/** The field of the answer that carries the edit, from the tool's descriptor (a script's cmd, a body of content); null: not editable. */
function fieldOf(tool) {
  const t = TOOLS[tool];
  return t?.judged === 'script' ? 'cmd' : t?.body === 'content' ? 'content' : null;
}

/**
 * The text the editor starts from, or why there is none: a body cut for the
 * card would be written back cut, so it is never offered for editing.
 */
function startingText(card) {
  const cmd = card.command ?? {};
  if (fieldOf(card.tool) === 'cmd') return { text: cmd.cmd ?? card.target };
  if (cmd.content === null || cmd.content === undefined) return { why: 'the content is too large to edit here (use thinkflow approve --edit-content-file)' };
  if (cmd.content_size !== null && cmd.content_size !== undefined && new TextEncoder().encode(cmd.content).length !== cmd.content_size) {
    return { why: 'the card holds only the first part of the content (use thinkflow approve --edit-content-file)' };
  }
  return { text: cmd.content };
}

/**
 * The "Edit…" button of a card (null for a tool that cannot be edited). It
 * opens an editor in the card; `onApproved()` runs once the edited command
 * was accepted (the card then leaves, as after Approve).
 */
export function editAction(card, { onApproved }) {
  const field = fieldOf(card.tool);
  if (!field) return null;
  const start = startingText(card);
  const btn = h('button', {
    type: 'button', class: 'edit', 'aria-expanded': 'false', disabled: start.text === undefined,
    title: start.why ?? null, onclick: () => openEditor(card, field, start.text, btn, onApproved),
  }, 'Edit…');
  return btn;
}

function openEditor(card, field, text, btn, onApproved) {
  const el = btn.closest('.card');
  const open = el?.querySelector('.edit-form');
  if (open) { open.querySelector('textarea').focus(); return; }
  const id = `edit-${card.token.slice(0, 12)}`;
  const what = field === 'cmd' ? 'command' : `content of ${card.command?.path ?? card.target}`;
  const area = h('textarea', { id, name: field, class: 'code', rows: String(Math.min(12, Math.max(3, text.split('\n').length + 1))), spellcheck: 'false' });
  area.value = text;
  const error = h('p', { class: 'edit-error warn-text', role: 'alert' });
  const send = h('button', { type: 'submit', class: 'primary approve-edited' }, 'Approve edited');
  const close = () => { form.remove(); btn.setAttribute('aria-expanded', 'false'); btn.focus(); };
  const form = h('form', { class: 'edit-form', 'aria-label': `Edit the ${what}, then approve` },
    h('label', { for: id }, `Edited ${what}: it runs instead of the one asked for, and the policy checks it first`),
    area, error,
    h('div', { class: 'actions' }, send, h('button', { type: 'button', class: 'edit-cancel', onclick: close }, 'Cancel')));
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); close(); } });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    send.disabled = true;
    error.textContent = 'Sending…';
    const out = await sendEdit(card, field, area.value);
    send.disabled = false;
    if (out.ok) { form.remove(); onApproved(); return; }
    error.textContent = out.message;
    area.focus();
  });
  (el.querySelector('.actions') ?? btn).after(form);
  btn.setAttribute('aria-expanded', 'true');
  area.focus();
}

/** POST approve_edited; resolves {ok: true} or {ok: false, message} (the API's words: the rule of a forbidden edit, a closed approval). */
async function sendEdit(card, field, value) {
  try {
    await api(`/v1/approvals/${encodeURIComponent(card.token)}`, { method: 'POST', body: { decision: 'approve_edited', [field]: value } });
    return { ok: true };
  } catch (err) {
    return { ok: false, message: refusal(err) };
  }
}
