// Built-in scenarios of the replay model: the demo job and the benchmark task
// suite. Each scenario is written once as a list of actions and turned into a
// `thinkflow` transcript (tf-* tags in the reasoning stream) and a `react` one
// (native tool calls, every independent call of a step in one model call, as
// current models do), so both flows do the same work. `reactSerialTranscript`
// keeps the older one-call-per-model-call baseline for comparison.
import { PIPELINE_FIX } from './pipeline-fix.ts';
import type { TranscriptInput, ScriptedTurn } from './transcript.ts';

type Action =
  | { tool: 'write' | 'append'; path: string; content: string; note: string }
  | { tool: 'mkdir'; path: string; note: string }
  | { tool: 'edit'; path: string; old_text: string; new_text: string; note: string }
  | { tool: 'bash'; cmd: string; note: string };

interface Scenario {
  name: string;
  match: string;
  intro: string;
  actions: Action[];
  /** Index of an action that fails when executed, and what replaces it and the rest. */
  failure?: { at: number; recovery: Action[]; explanation: string };
  summary: string;
}

const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function tag(a: Action, id: number): string {
  switch (a.tool) {
    case 'mkdir':
      return `<tf-mkdir id="${id}" path="${esc(a.path)}" />`;
    case 'bash':
      return `<tf-bash id="${id}" cmd="${esc(a.cmd)}" />`;
    case 'edit':
      return `<tf-edit id="${id}" path="${esc(a.path)}"><old>${a.old_text}</old><new>${a.new_text}</new></tf-edit>`;
    default:
      return `<tf-${a.tool} id="${id}" path="${esc(a.path)}">\n${a.content}</tf-${a.tool}>`;
  }
}

function argsOf(a: Action): Record<string, unknown> {
  if (a.tool === 'mkdir') return { path: a.path };
  if (a.tool === 'edit') return { path: a.path, old_text: a.old_text, new_text: a.new_text };
  if (a.tool === 'bash') return { cmd: a.cmd };
  return { path: a.path, content: a.content };
}

function reasoningFor(actions: Action[], firstId: number): string {
  return actions.map((a, i) => `${a.note}\n${tag(a, firstId + i)}\n`).join('');
}

export function thinkflowTranscript(s: Scenario): TranscriptInput {
  const turns: ScriptedTurn[] = [];
  if (!s.failure) {
    turns.push({ reasoning: `${s.intro}\n${reasoningFor(s.actions, 1)}`, text: s.summary, tool_calls: [] });
  } else {
    // The model writes everything in one go; the failing command interrupts it.
    turns.push({ reasoning: `${s.intro}\n${reasoningFor(s.actions, 1)}`, text: s.summary, tool_calls: [] });
    const nextId = s.actions.length + 1;
    turns.push({ reasoning: `${s.failure.explanation}\n${reasoningFor(s.failure.recovery, nextId)}`, text: s.summary, tool_calls: [] });
  }
  return { name: `${s.name}/thinkflow`, match: s.match, flow: 'thinkflow', turns };
}

/**
 * Steps of parallel tool calls: a call joins the current step unless it needs
 * an earlier call's result. None of the scripted actions reads anything (a
 * write creates its parent folders), so the plan is one step; the recovery
 * after a failure needs the failure, so it is the next step.
 */
export function reactTranscript(s: Scenario): TranscriptInput {
  const call = (a: Action) => ({ name: a.tool, arguments: argsOf(a) });
  const turns: ScriptedTurn[] = [{ reasoning: '', text: s.intro, tool_calls: s.actions.map(call) }];
  if (s.failure) turns.push({ reasoning: '', text: s.failure.explanation, tool_calls: s.failure.recovery.map(call) });
  turns.push({ reasoning: '', text: s.summary, tool_calls: [] });
  return { name: `${s.name}/react`, match: s.match, flow: 'react', turns };
}

/** The older baseline: one native tool call per model call, failing step included. */
export function reactSerialTranscript(s: Scenario): TranscriptInput {
  const steps = s.failure ? [...s.actions.slice(0, s.failure.at + 1), ...s.failure.recovery] : s.actions;
  const turns: ScriptedTurn[] = steps.map((a) => ({ reasoning: '', text: a.note, tool_calls: [{ name: a.tool, arguments: argsOf(a) }] }));
  turns.push({ reasoning: '', text: s.summary, tool_calls: [] });
  return { name: `${s.name}/react-serial`, match: s.match, flow: 'react', turns };
}

const para = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${topic} — paragraph ${i + 1}. The team revisits the plan, weighs the trade-offs of each option, and writes down what it learned so that the next reader can follow the reasoning without the meeting.`).join('\n\n');

export const WEB_SKELETON: Scenario = {
  name: 'web-skeleton',
  match: 'vite project skeleton',
  intro: 'A Vite project needs package.json, index.html, the config, a src tree and a README. I will write them all now.',
  actions: [
    { tool: 'mkdir', path: 'src/components', note: 'First the source folders.' },
    { tool: 'write', path: 'package.json', note: 'The package manifest with the Vite scripts.', content: `{\n  "name": "web-demo",\n  "private": true,\n  "version": "0.1.0",\n  "type": "module",\n  "scripts": {\n    "dev": "vite",\n    "build": "vite build",\n    "preview": "vite preview"\n  },\n  "devDependencies": {\n    "vite": "^7.0.0"\n  }\n}\n` },
    { tool: 'write', path: 'index.html', note: 'The HTML entry point.', content: `<!doctype html>\n<html lang="en">\n  <head>\n    <meta charset="UTF-8" />\n    <meta name="viewport" content="width=device-width, initial-scale=1.0" />\n    <title>web-demo</title>\n    <link rel="stylesheet" href="/src/style.css" />\n  </head>\n  <body>\n    <div id="app"></div>\n    <script type="module" src="/src/main.js"></script>\n  </body>\n</html>\n` },
    { tool: 'write', path: 'vite.config.js', note: 'A minimal Vite config.', content: `import { defineConfig } from 'vite';\n\nexport default defineConfig({\n  server: { port: 5173, strictPort: true },\n  build: { outDir: 'dist', sourcemap: true },\n});\n` },
    { tool: 'write', path: 'src/main.js', note: 'The entry module mounts the counter.', content: `import { createCounter } from './components/counter.js';\n\nconst app = document.querySelector('#app');\napp.innerHTML = '<h1>web-demo</h1><button id="counter" type="button"></button>';\ncreateCounter(document.querySelector('#counter'));\n` },
    { tool: 'write', path: 'src/components/counter.js', note: 'A small component.', content: `export function createCounter(element) {\n  let count = 0;\n  const render = () => {\n    element.textContent = \`count is \${count}\`;\n  };\n  element.addEventListener('click', () => {\n    count += 1;\n    render();\n  });\n  render();\n}\n` },
    { tool: 'write', path: 'src/style.css', note: 'Some base styles.', content: `:root {\n  font-family: system-ui, sans-serif;\n  color-scheme: light dark;\n}\n\nbody {\n  margin: 0;\n  display: grid;\n  place-items: center;\n  min-height: 100vh;\n}\n\nbutton {\n  padding: 0.6em 1.2em;\n  border-radius: 8px;\n}\n` },
    { tool: 'write', path: '.gitignore', note: 'Ignore build output.', content: 'node_modules\ndist\n' },
    { tool: 'write', path: 'README.md', note: 'And the README.', content: `# web-demo\n\nA Vite project skeleton.\n\n- \`npm install\`\n- \`npm run dev\` — development server on port 5173\n- \`npm run build\` — production build in \`dist/\`\n` },
  ],
  summary: 'The Vite project skeleton is ready: package.json, index.html, vite.config.js, src/main.js, src/components/counter.js, src/style.css, .gitignore and README.md. Run `npm install` then `npm run dev`.',
};

const CHAPTERS = ['The Harbour', 'The Storm', 'The Lighthouse', 'The Crossing', 'The Return'];

export const FIVE_CHAPTERS: Scenario = {
  name: 'five-chapters',
  match: 'five-chapter',
  intro: 'Five chapters and a table of contents, one file each, in book/.',
  actions: [
    { tool: 'mkdir', path: 'book', note: 'A folder for the book.' },
    ...CHAPTERS.map((title, i) => ({ tool: 'write' as const, path: `book/0${i + 1}.md`, note: `Chapter ${i + 1}.`, content: `# Chapter ${i + 1}: ${title}\n\n${para(title, 4)}\n` })),
    { tool: 'write', path: 'book/README.md', note: 'The table of contents.', content: `# The Voyage\n\n${CHAPTERS.map((t, i) => `${i + 1}. [${t}](0${i + 1}.md)`).join('\n')}\n` },
  ],
  summary: 'The five chapters are in book/01.md … book/05.md, with a table of contents in book/README.md.',
};

export const MIDWAY_FAILURE: Scenario = {
  name: 'midway-failure',
  match: 'release notes',
  intro: 'Release notes, a changelog entry and a version bump in config.json.',
  actions: [
    { tool: 'write', path: 'notes/release.md', note: 'The release notes.', content: `# Release 1.1\n\n${para('Release 1.1', 2)}\n` },
    { tool: 'write', path: 'CHANGELOG.md', note: 'The changelog.', content: '# Changelog\n\n## 1.1\n- faster start\n- smaller images\n' },
    { tool: 'edit', path: 'config.json', old_text: '"version": "1.0"', new_text: '"version": "1.1"', note: 'Bump the version in config.json.' },
    { tool: 'write', path: 'notes/upgrade.md', note: 'Upgrade notes.', content: '# Upgrading to 1.1\n\nNo breaking changes.\n' },
  ],
  failure: {
    at: 2,
    explanation: 'config.json does not exist yet, so the edit failed and the upgrade notes were skipped. I will create config.json and redo the notes with new ids.',
    recovery: [
      { tool: 'write', path: 'config.json', note: 'Create config.json at 1.1.', content: '{\n  "name": "demo",\n  "version": "1.1"\n}\n' },
      { tool: 'write', path: 'notes/upgrade.md', note: 'Upgrade notes again.', content: '# Upgrading to 1.1\n\nNo breaking changes.\n' },
    ],
  },
  summary: 'Release 1.1 is prepared: notes/release.md, CHANGELOG.md, notes/upgrade.md, and config.json at version 1.1.',
};

/**
 * A job for operators (`approval: on-request` with REVIEW_POLICY): a prompted
 * write, two prompted edits of one file (the second is covered when the first
 * is approved for the session), and a compound bash script whose parts have
 * different decisions (`ls` allowed, `tac` prompts by default, `head` allowed).
 */
export const OPERATOR_REVIEW: Scenario = {
  name: 'operator-review',
  match: 'operator review',
  intro: 'The plan goes into docs/, which a person reviews; then I check the result.',
  actions: [
    { tool: 'write', path: 'docs/plan.md', note: 'The plan itself (its folder is created with it).', content: `# Migration plan\n\nStatus: draft\n\n${Array.from({ length: 18 }, (_, i) => `${i + 1}. Step ${i + 1}: move service ${String.fromCharCode(65 + i)} behind the new gateway, then check its error rate for a day.`).join('\n')}\n` },
    { tool: 'edit', path: 'docs/plan.md', old_text: 'Status: draft', new_text: 'Status: ready for review\nOwner: platform team', note: 'Mark it ready.' },
    { tool: 'edit', path: 'docs/plan.md', old_text: '# Migration plan', new_text: '# Gateway migration plan', note: 'A clearer title.' },
    { tool: 'bash', cmd: 'ls -la docs && tac docs/plan.md | head -n 3', note: 'Check the files and the end of the plan.' },
  ],
  failure: { at: 3, recovery: [], explanation: 'The operator stopped the check; the plan itself is written, so I stop here.' },
  summary: 'The migration plan is in docs/plan.md, marked ready for review.',
};

/** The job policy that makes the docs/ changes of OPERATOR_REVIEW wait for an operator (a submitter may add prompts). */
export const REVIEW_POLICY = {
  rules: [{ id: 'docs-reviewed', tool: ['write', 'append', 'edit'], path: 'docs/**', decision: 'prompt', justification: 'documentation changes are reviewed by a person' }],
};
export const REVIEW_TASK = 'Write the gateway migration plan into docs/ for operator review.';

/** Twenty files in one go: the job whose time beyond the model's own streaming `bench:flows` measures (not built in). */
export const TWENTY_WRITES: Scenario = {
  name: 'twenty-writes',
  match: 'twenty module stubs',
  intro: 'Twenty module stubs under lib/, each with a short doc comment.',
  actions: Array.from({ length: 20 }, (_, i) => ({
    tool: 'write' as const, path: `lib/module-${String(i + 1).padStart(2, '0')}.js`, note: `Module ${i + 1}.`,
    content: `// Module ${i + 1}: a stub that later work fills in.
export function run${i + 1}(input) {
  return { module: ${i + 1}, input };
}
`,
  })),
  summary: 'The twenty module stubs are in lib/module-01.js … lib/module-20.js.',
};

export const SCENARIOS: readonly Scenario[] = [WEB_SKELETON, FIVE_CHAPTERS, MIDWAY_FAILURE, OPERATOR_REVIEW];

/** Both flows of every scenario: what the replay model serves when OPENAI_BASE_URL is unset. */
export const BUILTIN_TRANSCRIPTS: TranscriptInput[] = [...SCENARIOS.flatMap((s) => [thinkflowTranscript(s), reactTranscript(s)]), PIPELINE_FIX];

export const DEMO_TASK = 'Create a Vite project skeleton for a small web demo: package.json, index.html, a config, a src tree with one component, styles and a README.';
