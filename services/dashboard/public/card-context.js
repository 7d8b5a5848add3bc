// An approval's context on its card (API.md, additions 2026-12-01): the job's
// task (its first lines, the rest behind an expand control), its metadata,
// what the agent said just before the command, and, for a command that runs a
// workspace file (`bash deploy.sh`, `npm test`), that file: its path, the
// command that wrote it (linked to the job's ledger), its content, and for a
// shell script each line split into parts with each part's decision, shown
// the way the card shows a bash command's parts. All of it is the agent's or
// the submitter's text: it is only ever set as text (dom.js).
import { h } from './dom.js';

const TASK_LINES = 3;
const TASK_CHARS = 300;
/** A metadata value longer than this is cut on the card (the job page has it whole). */
const VALUE_CHARS = 200;
/** Up to this many script lines, their parts are shown open; more stay behind a summary. */
const OPEN_LINES = 12;
const RUNNER_WORDS = { bash: 'bash runs', sh: 'sh runs', python3: 'python3 runs', node: 'node runs' };

/** The task: its first lines, and the whole behind a <details> when there is more. */
function taskView(task, cut) {
  const lines = task.split('\n');
  const head = lines.slice(0, TASK_LINES).join('\n');
  const short = head.length > TASK_CHARS ? `${head.slice(0, TASK_CHARS - 1)}…` : head;
  const more = lines.length > TASK_LINES || head.length > TASK_CHARS;
  return h('div', { class: 'task' },
    h('p', { class: 'task-head' }, more ? `${short}${short.endsWith('…') ? '' : ' …'}` : short),
    more ? h('details', { class: 'task-all' }, h('summary', {}, `Show the whole task (${lines.length} lines${cut ? ', cut at 16 KiB' : ''})`),
      h('pre', { class: 'code', tabindex: '0', 'aria-label': 'the whole task' }, task)) : null);
}

function metadataView(metadata) {
  const text = (v) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > VALUE_CHARS ? `${s.slice(0, VALUE_CHARS - 1)}…` : s;
  };
  return h('dl', { class: 'kv metadata' }, Object.entries(metadata).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, h('code', {}, text(v)))]));
}

function contextSection(c, id) {
  const ctx = c.context;
  if (!ctx) return null;
  return h('section', { class: 'context', 'aria-labelledby': `${id}-ctx` },
    h('h4', { id: `${id}-ctx` }, c.job_id ? 'The job and the agent\'s words' : 'The agent\'s words'),
    ctx.task ? [h('p', { class: 'label' }, 'Task'), taskView(ctx.task, ctx.task_truncated)] : null,
    ctx.metadata && Object.keys(ctx.metadata).length ? [h('p', { class: 'label' }, 'Metadata'), metadataView(ctx.metadata)] : null,
    ctx.metadata_truncated ? h('p', { class: 'muted small metadata-cut' }, 'The metadata is longer than a card shows: the job page has all of it.') : null,
    h('p', { class: 'label' }, 'Said just before this command'),
    ctx.preceding_text
      ? h('pre', { class: 'code preceding', tabindex: '0', 'aria-label': 'what the agent said just before this command' }, ctx.preceding_text)
      : h('p', { class: 'muted preceding-none' }, c.tool === 'network' ? 'A connection has no words of its own: see the command that was running.' : 'Nothing: the agent wrote no text before this command.'));
}

/** Which command wrote the file, linked to the job page where its ledger is. */
function writtenBy(c, f) {
  if (!f.written_by_command_id) {
    return h('p', { class: 'muted written-by' }, 'Not written by a command of this session that the ledger knows (seeded, uploaded, or made by a script): read it before approving.');
  }
  const what = `command ${f.written_by_command_id}${f.written_by_turn !== undefined ? ` of turn ${f.written_by_turn}` : ''} (ledger #${f.written_by_index ?? '?'})`;
  return h('p', { class: 'written-by' }, 'Written by ',
    c.job_id ? h('a', { href: `#/jobs/${c.job_id}`, title: `the job's ledger, entry #${f.written_by_index ?? '?'}` }, what) : h('strong', {}, what), '.');
}

/** Each line of a shell script with its parts and their decisions (segmentsTable: the card's own table for a bash command). */
function linesView(lines, segmentsTable) {
  if (!lines || lines.lines.length === 0) return null;
  const asks = lines.lines.filter((l) => l.bash.segments.some((s) => s.decision !== 'allow')).length;
  const summary = `Each line, split into parts with its decision (${lines.lines.length} line${lines.lines.length === 1 ? '' : 's'}; ${asks} would not run unattended)${lines.truncated ? '; not every line is shown' : ''}`;
  return h('details', { class: 'script-lines', open: lines.lines.length <= OPEN_LINES },
    h('summary', {}, summary),
    lines.lines.map((l) => h('div', { class: 'script-line' }, h('p', {}, `Line ${l.line}: `, h('code', {}, l.text)), segmentsTable(l.bash))));
}

function indirectSection(c, id, segmentsTable) {
  const f = c.indirect;
  if (!f) return null;
  const size = `${f.bytes} byte${f.bytes === 1 ? '' : 's'}${f.truncated ? '; only the first 64 KiB are shown' : ''}`;
  const what = f.runner === 'npm'
    ? h('p', {}, 'npm runs the script ', h('code', {}, f.script ?? '?'), ' of ', h('code', {}, f.path), `: this line (${size}).`)
    : h('p', {}, `${RUNNER_WORDS[f.runner] ?? 'It runs'} the workspace file `, h('code', {}, f.path), ` (${size}).`);
  return h('section', { class: 'indirect', 'aria-labelledby': `${id}-ind` },
    h('h4', { id: `${id}-ind` }, f.runner === 'npm' ? 'The script it runs' : 'The file it runs'),
    what, writtenBy(c, f),
    h('pre', { class: 'code indirect-content', tabindex: '0', 'aria-label': `contents of ${f.path}` }, f.content),
    linesView(c.indirect_lines, segmentsTable));
}

/**
 * The card's context sections: the file the command runs (when it runs one),
 * then the task, metadata and the agent's words.
 * @param segmentsTable the card's rendering of a bash explanation (cards.js)
 */
export function renderContext(c, { segmentsTable }) {
  const id = `ctx-${c.token.slice(0, 12)}`;
  return [indirectSection(c, id, segmentsTable), contextSection(c, id)];
}

const GROUP_TITLE_CHARS = 80;

/** A group's heading: the job's task (its first line, cut), linked to the job, with the id as secondary text. */
export function groupLabel(c) {
  if (!c.job_id) return `Session ${c.session_id}`;
  const first = (c.context?.task ?? '').split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  const title = first.length > GROUP_TITLE_CHARS ? `${first.slice(0, GROUP_TITLE_CHARS - 1)}…` : first;
  return [h('a', { href: `#/jobs/${c.job_id}` }, title || `Job ${c.job_id}`), ' ', h('span', { class: 'muted small group-id' }, title ? `job ${c.job_id}` : '')];
}
