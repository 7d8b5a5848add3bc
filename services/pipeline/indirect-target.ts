import { normalizeWorkspacePath, splitScript } from '../policy/index.ts';
import type { IndirectRunner } from './approval-context.ts';

// Which workspace file a bash command runs, when it is one simple command
// whose program reads a file (API.md, additions 2026-12-01, `indirect`):
// `bash FILE`, `sh FILE`, `python3 FILE`, `node FILE`, and `npm test` /
// `npm run NAME` (the script line in package.json). Read from the argv the
// policy engine splits, so quoting is the engine's. Anything else (a chain,
// `bash -c`, `python3 -m`, `node -e`, a path outside the workspace) names no
// file: the card then shows the command alone, as before. Nor does a command
// that runs more than the file shown could say (`node -r X`, npm options that
// pick another package.json or shell): the operator reads the command itself.

export type IndirectTarget = { runner: IndirectRunner; path: string; script?: string };

/** Options that take the next word as their value, per program (the file comes after them). */
const VALUED: Record<string, ReadonlySet<string>> = {
  shell: new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']),
  python3: new Set(['-W', '-X', '--check-hash-based-pycs']),
  node: new Set(['-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions', '--input-type', '--env-file']),
};
/** Options that mean the program does not read a file: inline code, a module, stdin. */
const NO_FILE: Record<string, (opt: string) => boolean> = {
  shell: (o) => /^-[A-Za-z]*[cs]/.test(o) && !o.startsWith('--'),
  python3: (o) => /^-[A-Za-z]*[cm]/.test(o) && !o.startsWith('--'),
  // A preload (`-r FILE`, `--import FILE`, a loader) runs another file before the one named: no one file is what runs.
  node: (o) => ['-e', '--eval', '-p', '--print', '-i', '--interactive', '--test', '-r', '--require', '--import', '--loader', '--experimental-loader'].includes(o.split('=')[0]!),
};
/**
 * npm options that leave which package.json and which shell as they are; any other option before `--`
 * (`--prefix`, `--workspace`, `--script-shell`, `-g`, …) may run another file's script, so it names none.
 */
const NPM_SAFE = new Set(['-s', '--silent', '-q', '--quiet', '--if-present', '-d', '-dd', '-ddd', '--verbose']);
const NPM_TEST = new Set(['test', 't', 'tst']);
const NPM_RUN = new Set(['run', 'run-script', 'rum', 'urn']);

/**
 * @example indirectTarget('bash ./deploy.sh prod') // { runner: 'bash', path: 'deploy.sh' }
 * @example indirectTarget('npm run build')          // { runner: 'npm', path: 'package.json', script: 'build' }
 */
export function indirectTarget(cmd: string): IndirectTarget | null {
  const split = splitScript(cmd);
  if (split.complex !== undefined || split.commands.length !== 1) return null;
  const [head, ...args] = split.commands[0]!;
  const program = head!.slice(head!.lastIndexOf('/') + 1);
  switch (program) {
    case 'bash': case 'sh': return fileOf(program, args, 'shell');
    case 'python3': case 'python': return fileOf('python3', args, 'python3');
    case 'node': case 'nodejs': return fileOf('node', args, 'node');
    case 'npm': return npmScript(args);
    default: return null;
  }
}

function fileOf(runner: IndirectRunner, args: string[], kind: keyof typeof VALUED): IndirectTarget | null {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return pathTarget(runner, args[i + 1]);
    if (a === '-' || NO_FILE[kind]!(a)) return null;
    if (VALUED[kind]!.has(a)) { i++; continue; }
    if (a.startsWith('-') || (kind === 'shell' && a.startsWith('+'))) continue;
    return pathTarget(runner, a);
  }
  return null;
}

function npmScript(args: string[]): IndirectTarget | null {
  const end = args.indexOf('--');
  const own = end < 0 ? args : args.slice(0, end); // after `--`: the script's own arguments
  if (own.some((a) => a.startsWith('-') && !NPM_SAFE.has(a))) return null;
  const words = own.filter((a) => !a.startsWith('-'));
  const verb = words[0];
  const script = verb && NPM_TEST.has(verb) ? 'test' : verb === 'start' ? 'start' : verb && NPM_RUN.has(verb) ? words[1] : undefined;
  return script ? { runner: 'npm', path: 'package.json', script } : null;
}

function pathTarget(runner: IndirectRunner, raw: string | undefined): IndirectTarget | null {
  if (!raw) return null;
  const norm = normalizeWorkspacePath(raw);
  return norm.ok && norm.path !== '.' ? { runner, path: norm.path } : null;
}
