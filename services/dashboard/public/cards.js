// One approval as a card: what will run, why it stopped, and the session's
// last ledger entries. Pure rendering from the card data of
// GET /v1/approvals/events (its `snapshot` and `approval` events); the
// approvals view owns state and actions.
import { h, when } from './dom.js';
import { label } from './labels.js';
import { foldable } from './card-fold.js';
import { previewPanel } from './preview.js';
import { renderContext } from './card-context.js';
import { TOOLS } from './tools.js';

const FOLD_LINES = 16;
const FOLD_CHARS = 1500;

// The engine's words when a default decided: "…; bash default (global): prompt".
const DEFAULT_REASON = /\b([a-z_]+) default \(([^)]+)\): (allow|prompt|forbid)\b/;

/**
 * The rules that matched, and the default when the decision came from it: an
 * `allow` rule can match one part while the stop came from the default
 * `prompt` of another part (the reason names it), and both must be shown.
 */
function rulesList(rules, reason) {
  const d = DEFAULT_REASON.exec(reason ?? '');
  const fromDefault = d && !(rules ?? []).some((r) => r.decision === d[3]);
  if (!rules?.length && !fromDefault) return h('p', { class: 'muted' }, 'No rule matched: the tool\'s default decided.');
  return h('ul', { class: 'rules' }, (rules ?? []).map((r) => h('li', {},
    h('span', { class: `decision d-${r.decision}` }, r.decision), ' ',
    h('code', {}, r.id), h('span', { class: 'muted' }, ` (${r.layer})`),
    r.justification ? [': ', r.justification] : '')),
  fromDefault ? h('li', { class: 'default-rule' }, h('span', { class: `decision d-${d[3]}` }, d[3]), ' ',
    h('code', {}, `${d[1]} default`), h('span', { class: 'muted' }, ` (${d[2]})`), ': no rule decided this, so the default did') : null);
}

/** Long text: its first lines shown, the whole behind a <details>; plain monospace. */
function folded(text, label) {
  const lines = text.split('\n');
  const pre = h('pre', { class: 'code', tabindex: '0' }, text);
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return pre;
  const head = lines.slice(0, 8).join('\n').slice(0, 800);
  return h('div', { class: 'fold' },
    h('pre', { class: 'code', tabindex: '0', 'aria-label': `${label}, first lines` }, `${head}\n…`),
    h('details', {}, h('summary', {}, `Show all of it: ${lines.length} lines, ${text.length} characters`), pre));
}

function diffView(diff) {
  return h('pre', { class: 'code diff', tabindex: '0', 'aria-label': 'diff, old to new' }, diff.map((l) => h('span', {
    class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx',
  }, h('span', { class: 'sr-only' }, l.op === '+' ? 'added: ' : l.op === '-' ? 'removed: ' : ''), `${l.op} ${l.text}\n`)));
}

/** Past the server's diff limits (THINKFLOW_DIFF_MAX_*): why, and each side's size and sha256. */
function noDiff(c) {
  if (!c.diff_truncated) return null;
  const side = (name, f) => h('li', {}, `${name}: ${f.bytes} bytes, ${f.lines} lines, sha256 `, h('code', { class: 'hash' }, f.sha256));
  return h('div', { class: 'no-diff' },
    h('p', { class: 'warn-text' }, c.diff_note ?? 'No diff: content too large to diff.'),
    c.edit_sides ? h('ul', {}, side('old', c.edit_sides.old), side('new', c.edit_sides.new)) : null);
}

function segmentsTable(bash) {
  return [
    bash.complex ? h('p', { class: 'warn-text' }, `This script cannot be split safely (${bash.complex}): it is judged as a whole.`) : null,
    h('table', { class: 'segments' },
      h('caption', {}, 'Each part of the script and its decision'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Part'), h('th', { scope: 'col' }, 'Decision'), h('th', { scope: 'col' }, 'Why'))),
      h('tbody', {}, bash.segments.map((s, i) => h('tr', { class: `seg seg-${s.decision}` },
        h('td', {}, String(i + 1)), h('td', {}, h('code', {}, s.text)),
        h('td', {}, h('span', { class: `decision d-${s.decision}` }, s.decision)),
        h('td', {}, rulesList(s.matched_rules, s.reason), h('p', { class: 'muted small' }, s.reason)))))),
  ];
}

/** Shown by what the tool's descriptor says (tools.js): a script, a body of content, an edit, or its paths. */
function whatWillRun(c) {
  const cmd = c.command;
  if (c.tool === 'network') return connection(c);
  const tool = TOOLS[c.tool];
  if (!tool) return h('p', {}, `${c.tool} `, h('code', {}, cmd.path ?? c.target));
  if (tool.judged === 'script') {
    return [h('pre', { class: 'code', tabindex: '0', 'aria-label': 'full command' }, cmd.cmd ?? c.target), c.bash ? segmentsTable(c.bash) : null];
  }
  if (tool.body === 'content') {
    if (cmd.content === null) return h('p', {}, `${c.tool} ${cmd.content_size ?? '?'} bytes to ${cmd.path} (content too large to keep inline; see the ledger digest).`);
    return [h('p', {}, `${tool.verb} ${cmd.content.length} characters to `, h('code', {}, cmd.path), ':'), folded(cmd.content, 'Content')];
  }
  if (tool.body === 'edit') return [h('p', {}, `${tool.verb} `, h('code', {}, cmd.path), ': old → new'), c.diff ? diffView(c.diff) : noDiff(c)];
  const paths = tool.paths.map((p) => h('code', { title: p.access ? `${p.access}s` : null }, cmd[p.name] ?? ''));
  return h('p', {}, `${tool.verb} `, paths.flatMap((p, k) => (k === 0 ? [p] : [' → ', p])));
}

/** A connection held at the session's egress proxy: where to, for whom, and the command that was running (POLICY.md §8). */
function connection(c) {
  const at = c.target.lastIndexOf(':');
  const host = c.target.slice(0, at).replace(/^\[|\]$/g, '');
  return [
    h('p', {}, 'Open a network connection to ', h('code', {}, host), ' port ', h('code', {}, c.target.slice(at + 1)),
      ` for session ${c.session_id}`, c.job_id ? ` (job ${c.job_id})` : '', '.'),
    c.command.cmd !== null
      ? h('p', {}, `Asked while ${c.command.id ? `command ${c.command.id}` : 'this command'} ran: `, h('code', {}, c.command.cmd))
      : h('p', { class: 'muted' }, 'No command of the session was running when it connected.'),
  ];
}

function recentTable(recent) {
  if (!recent.length) return h('p', { class: 'muted' }, 'No ledger entries in this session before this one.');
  return h('table', { class: 'recent' },
    h('caption', { class: 'sr-only' }, 'Last ledger entries of the session before this command'),
    h('thead', {}, h('tr', {}, ['#', 'Command', 'Tool', 'Target', 'Status'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, recent.map((r) => h('tr', {},
      h('td', {}, String(r.index)), h('td', {}, r.id), h('td', {}, r.tool), h('td', {}, h('code', {}, r.target)),
      h('td', {}, h('span', { class: `status s-${r.status}` }, label(r.status)), r.decided_by ? ` (${label(r.decision)} by ${r.decided_by})` : '')))));
}

/**
 * The card element; `actions` are the buttons the view wires (null for a read-only viewer).
 * Compact (card-fold.js): only the head, the `.gist` line, `.actions`, `.card-status` and
 * anything marked `.compact-keep` show until the card is opened.
 */
export function renderCard(c, { actions, onSelect }) {
  const id = `card-${c.token.slice(0, 12)}`;
  const why = c.policy_reason ?? c.justification ?? '';
  const more = h('button', { type: 'button', class: 'link more' }, 'Details');
  const card = h('article', { class: 'card compact', id, tabindex: '0', 'aria-labelledby': `${id}-h`, 'aria-describedby': `${id}-keys`, dataset: { token: c.token, tool: c.tool } },
    h('header', { class: 'card-head' },
      onSelect ? h('label', { class: 'select' }, h('input', { type: 'checkbox', class: 'sel', onchange: (e) => onSelect(e.target.checked) }), h('span', { class: 'sr-only' }, `Select command ${c.command_id}`)) : null,
      h('h3', { id: `${id}-h` }, h('span', { class: `tool t-${c.tool}` }, c.tool), ' ', h('code', { class: 'target' }, c.target)),
      more,
      // A network approval's id names its connection record (net-N); it has no turn of its own.
      h('p', { class: 'meta' }, c.tool === 'network' ? `connection ${c.command_id}` : `command ${c.command_id} · turn ${c.turn}`, ` · asked ${when(c.created_at)} · `,
        h('span', { class: 'timer', dataset: { expires: c.expires_at } }, ''))),
    h('p', { class: 'gist' }, why),
    h('section', { class: 'why' }, h('h4', {}, 'Why it stopped here'), h('p', { class: 'reason' }, why),
      h('p', { class: 'muted small' }, 'Matched rules:'), rulesList(c.matched_rules, c.policy_reason)),
    h('section', { class: 'what' }, h('h4', {}, 'What will run'), whatWillRun(c)),
    renderContext(c, { segmentsTable }),
    h('details', { class: 'recent-wrap' }, h('summary', {}, `Session's last ledger entries (${c.recent.length})`), recentTable(c.recent)),
    actions ? h('div', { class: 'actions' }, actions) : null,
    actions ? previewPanel(c) : null,
    h('p', { class: 'keys muted small', id: `${id}-keys` }, actions ? 'Keys: A approve · S approve for session · R reject · X select · J/K next/previous' : 'Read only: your key cannot decide.'),
    h('p', { class: 'card-status', role: 'status' }));
  foldable(card, more);
  return card;
}
