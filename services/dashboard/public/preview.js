// "Preview before deciding" on a pending card: the command runs on a
// throwaway copy of the session's workspace (POST /v1/approvals/:token/preview,
// network none, the session's limits; the real workspace is never touched),
// and the card shows what it printed and what it changed, or why no preview
// is possible. Output and diffs are workspace content, so attacker input:
// text only, through dom.js.
import { api, words } from './api.js';
import { clear, h } from './dom.js';

const CHANGE_WORDS = { added: 'added', modified: 'modified', deleted: 'deleted' };

/** The card's Preview button and the place its result shows (visible on a compact card too). */
export function previewPanel(card) {
  const id = `preview-${card.token.slice(0, 12)}`;
  const out = h('div', { class: 'preview-out', id, 'aria-live': 'polite' });
  const btn = h('button', { type: 'button', class: 'preview-btn', 'aria-controls': id }, 'Preview');
  btn.addEventListener('click', () => run(card, btn, out));
  return h('div', { class: 'preview compact-keep' }, btn, out);
}

async function run(card, btn, out) {
  btn.disabled = true;
  btn.setAttribute('aria-busy', 'true');
  clear(out, h('p', { class: 'muted preview-progress', role: 'status' }, 'Running the command on a throwaway copy of the workspace… (bounded: at most about a minute)'));
  try {
    const { preview } = await api(`/v1/approvals/${encodeURIComponent(card.token)}/preview`, { method: 'POST', body: {} });
    clear(out, result(preview));
  } catch (err) {
    clear(out, h('p', { class: 'warn-text preview-reason' }, `No preview: ${words(err)}`));
  } finally {
    btn.disabled = false;
    btn.removeAttribute('aria-busy');
    btn.textContent = 'Preview again';
  }
}

function result(p) {
  if (p.status === 'unavailable') return h('p', { class: 'warn-text preview-reason' }, `Preview not possible: ${p.reason}`);
  return [
    h('h4', {}, 'Preview ', h('span', { class: 'muted small' }, '(ran on a throwaway copy: the workspace was not changed)')),
    p.reason ? h('p', { class: 'warn-text preview-reason' }, p.reason) : null,
    h('p', { class: 'preview-summary' }, summary(p)),
    output('Output', p.stdout, 'preview-stdout'),
    output('Errors', p.stderr, 'preview-stderr'),
    p.truncated ? h('p', { class: 'muted small' }, 'The output was cut (16 KiB per stream are kept).') : null,
    changes(p),
  ];
}

function summary(p) {
  const exit = p.exit_code !== undefined ? `exit code ${p.exit_code}` : p.error_code ? p.error_code.replace(/_/g, ' ') : 'no exit code';
  const took = p.duration_ms !== undefined ? `, ${(p.duration_ms / 1000).toFixed(1)} s in all` : '';
  const limit = p.limit_ms !== undefined ? ` (time limit ${p.limit_ms / 1000} s)` : '';
  return `${exit}${took}${limit}; ${p.changes.length} file${p.changes.length === 1 ? '' : 's'} changed${p.changes_truncated ? ' (more not listed)' : ''}.`;
}

function output(title, text, cls) {
  if (!text) return null;
  return [h('p', { class: 'muted small' }, title), h('pre', { class: `code ${cls}`, tabindex: '0', 'aria-label': `preview ${title.toLowerCase()}` }, text)];
}

function changes(p) {
  if (p.changes.length === 0) return h('p', { class: 'muted' }, 'No file would change.');
  return h('ul', { class: 'preview-changes' }, p.changes.map((c) => h('li', { dataset: { change: c.change } },
    h('span', { class: `change c-${c.change}` }, CHANGE_WORDS[c.change] ?? c.change), ' ', h('code', {}, c.path),
    c.change === 'deleted' ? null : h('span', { class: 'muted small' }, ` ${c.bytes} bytes`),
    c.diff ? h('details', {}, h('summary', {}, `Diff of ${c.path}${c.diff_truncated ? ' (cut)' : ''}`), diffText(c.diff)) : null)));
}

/** A unified diff's lines, marked for sighted and screen-reader users alike. */
function diffText(diff) {
  const lines = diff.replace(/\n$/, '').split('\n');
  return h('pre', { class: 'code diff', tabindex: '0', 'aria-label': 'diff, old to new' }, lines.map((l) => {
    const kind = l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : 'ctx';
    return h('span', { class: kind }, h('span', { class: 'sr-only' }, kind === 'add' ? 'added: ' : kind === 'del' ? 'removed: ' : ''), `${l}\n`);
  }));
}
