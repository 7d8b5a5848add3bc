// Commands that run another command: `env FOO=1 curl x`, `nice -n 5 rm -rf /`,
// `timeout 5 wget y`, `xargs rm`, `bash -c 'curl x'`, `eval "…"`,
// `find . -exec rm {} ;`. Rules only see an argv prefix, so without this a
// wrapper would hide a forbidden command behind an unmatched (merely
// prompting) one and an operator could approve a forbid by accident. The
// inner commands found here may only add forbid/prompt rules to a part,
// never an allow (policy.ts).
//
// Unwrapping never loosens (POLICY.md §7): an invocation whose options are
// not all understood (`bash -c -- "…"`, `sh -ec "…"`, `env -S "…"`, a shell
// reading its script from stdin) is reported `complex`, and then every
// argument that could be a command or a script is read for restrictions.
import { splitScript, type SimpleCommand } from './shell-split.ts';
import { newBudget, spend, type Budget } from './budget.ts';

export type Unwrapped = { commands: SimpleCommand[]; complex?: string };

type Spec = { flags: ReadonlySet<string>; values: ReadonlySet<string>; operands?: number };
const spec = (flags: string[], values: string[], operands = 0): Spec => ({ flags: new Set(flags), values: new Set(values), operands });

/** Options each wrapper may carry before its command; anything else is not understood. */
const WRAPPERS: Record<string, Spec> = {
  env: spec(['-i', '--ignore-environment', '-0', '--null', '-v', '--debug'], ['-u', '--unset', '-C', '--chdir']),
  nice: spec([], ['-n', '--adjustment']),
  time: spec(['-p', '-v', '--verbose', '--portability', '-a', '--append', '-q', '--quiet'], ['-f', '--format', '-o', '--output']),
  timeout: spec(['--preserve-status', '--foreground', '-v', '--verbose'], ['-s', '--signal', '-k', '--kill-after'], 1),
  stdbuf: spec([], ['-i', '-o', '-e', '--input', '--output', '--error']),
  xargs: spec(['-0', '--null', '-r', '--no-run-if-empty', '-t', '--verbose', '-p', '--interactive', '-x', '--exit', '-o', '--open-tty', '-i', '-e', '-l'],
    ['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars']),
  exec: spec(['-c', '-l'], ['-a']),
  sudo: spec(['-E', '-H', '-n', '-S', '-i', '-s', '-b', '-k'], ['-u', '--user', '-g', '--group', '-C', '-D', '--chdir', '-h', '--host', '-p', '--prompt', '-r', '--role', '-t', '--type', '-U', '--other-user']),
  doas: spec(['-n', '-s'], ['-u', '-C']),
  nohup: spec([], []),
  command: spec(['-p'], []),
  builtin: spec([], []),
  setsid: spec(['-f', '--fork', '-w', '--wait', '-c', '--ctty'], []),
  unbuffer: spec([], []),
  ionice: spec(['-t', '--ignore'], ['-c', '--class', '-n', '--classdata']),
  chrt: spec([], [], 1),
  flock: spec(['-s', '--shared', '-x', '--exclusive', '-n', '--nonblock', '-o', '--close', '-u', '--unlock'], ['-w', '--timeout', '-E', '--conflict-exit-code'], 1),
  busybox: spec([], []), // `busybox wget …`: the applet is the command
};
/** Runners whose command lines are not parsed here (`script -c`, `strace -e …`, `parallel … :::`): always read by guessing. */
const GUESSED = new Set(['script', 'strace', 'ltrace', 'parallel', 'su', 'runuser', 'chpst', 'unshare', 'nsenter', 'chroot', 'taskset', 'prlimit', 'numactl', 'faketime', 'cpulimit', 'setpriv', 'capsh', 'firejail', 'bwrap', 'proot']);
const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'ash', 'busybox-sh', 'rbash']);
/** Programs that join their arguments into a shell script. */
const SCRIPT_JOINERS = new Set(['eval', 'watch']);
const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);
const NAME_VALUE = /^[A-Za-z_][A-Za-z0-9_]*=/;
const MAX_DEPTH = 4;
/** Best-effort reading of a not-understood invocation tries this many argument positions. */
const MAX_GUESSES = 32;
/** Commands read out of one argv through wrappers, all levels together. */
const MAX_COMMANDS = 256;

/**
 * Every command `argv` runs through wrappers, nested wrappers included
 * (`env nice curl x` → `nice curl x`, `curl x`), with the simple commands
 * of inner scripts (their redirections count too). `complex` when some
 * invocation on the way was not fully understood.
 */
export function unwrap(argv: readonly string[], budget: WrapBudget = newWrapBudget()): Unwrapped {
  const r = unwrapAt(argv, 0, budget);
  if (budget.left <= 0) r.complex ??= `more than ${MAX_COMMANDS} wrapped commands in one script`;
  if (budget.steps.over !== undefined) r.complex ??= budget.steps.over;
  return r;
}

/** Shared by every command of one script, so a script of many wrappers stays bounded too; `steps` is the script's evaluation budget. */
export type WrapBudget = { left: number; steps: Budget };
export function newWrapBudget(steps: Budget = newBudget()): WrapBudget {
  return { left: MAX_COMMANDS, steps };
}

/** The argv of every command `argv` runs through wrappers (tests, diagnostics). */
export function innerCommands(argv: readonly string[]): string[][] {
  return unwrap(argv).commands.map((c) => c.argv).filter((a) => a.length > 0);
}

/** `budget` bounds the whole unwrapping: guessed readings could otherwise fan out at every level. */
function unwrapAt(argv: readonly string[], depth: number, budget: WrapBudget): Unwrapped {
  if (argv.length === 0 || budget.left <= 0 || budget.steps.left <= 0) return { commands: [] };
  const direct = unwrapOnce(baseName(argv[0]!), argv, budget.steps);
  const out: SimpleCommand[] = [];
  let complex = direct.complex;
  for (const inner of direct.commands) {
    if (inner.argv.length === 0 && inner.redirs.length === 0) continue;
    if (--budget.left < 0) break;
    out.push(inner);
    if (depth + 1 >= MAX_DEPTH) {
      if (inner.argv.length > 0 && unwrapOnce(baseName(inner.argv[0]!), inner.argv, budget.steps).commands.length > 0) complex ??= 'wrappers nested too deeply';
      continue;
    }
    const deeper = unwrapAt(inner.argv, depth + 1, budget);
    out.push(...deeper.commands);
    complex ??= deeper.complex;
  }
  return complex === undefined ? { commands: out } : { commands: out, complex };
}

function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

function unwrapOnce(program: string, argv: readonly string[], steps: Budget): Unwrapped {
  if (SHELLS.has(program)) return shellScript(program, argv, steps);
  if (SCRIPT_JOINERS.has(program)) return program === 'watch' ? guess(argv, 'watch runs its arguments as a script', steps) : script(argv.slice(1).join(' '), steps);
  if (program === 'find') return findExec(argv, steps);
  if (GUESSED.has(program)) return guess(argv, `${program} runs a command line that is not parsed here`, steps);
  const s = WRAPPERS[program];
  if (s === undefined) return { commands: [] };
  // `command -v x` / `-V` only print where x is.
  if (program === 'command' && argv.some((a) => a === '-v' || a === '-V')) return { commands: [] };
  let k = 1;
  while (k < argv.length) {
    const a = argv[k]!;
    if (a === '--') { k++; break; }
    if (program === 'env' && NAME_VALUE.test(a)) { k++; continue; }
    if (program === 'nice' && /^-[0-9]+$/.test(a)) { k++; continue; }
    if (!a.startsWith('-') || a === '-') break;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0 && s.values.has(a.slice(0, eq))) { k++; continue; }
    if (s.flags.has(a)) { k++; continue; }
    if (s.values.has(a)) { k += 2; continue; }
    // A short valued option with its value glued on (`stdbuf -oL`, `nice -n5`).
    if (!a.startsWith('--') && s.values.has(a.slice(0, 2))) { k++; continue; }
    return guess(argv, `${program} option '${a}' is not understood`, steps);
  }
  k += s.operands ?? 0; // timeout's duration, flock's lock file, chrt's priority
  if (k >= argv.length || !spend(steps, argv.length - k)) return { commands: [] };
  return { commands: [plain(argv.slice(k))] };
}

/**
 * `bash -c 'script' [name args…]` and `bash FILE [args…]` are understood;
 * any other option, or a shell that reads its script from stdin, is not.
 */
function shellScript(program: string, argv: readonly string[], steps: Budget): Unwrapped {
  // (`bash -c -- 'x'` and `bash -c -e 'x'` take options after -c: not this form.)
  if (argv.length >= 3 && argv[1] === '-c' && !/^[-+]/.test(argv[2]!)) return script(argv[2]!, steps);
  if (argv.length >= 2 && !/^[-+]/.test(argv[1]!)) return { commands: [] }; // runs a file we cannot see: prompts as itself
  if (argv.length === 1) return { commands: [], complex: `${program} reads its script from standard input` };
  return guess(argv, `${program} invoked with options that are not fully understood ('${argv.slice(1, 4).join(' ')}')`, steps);
}

/** `find … -exec CMD … ;` runs CMD; every such clause counts. */
function findExec(argv: readonly string[], steps: Budget): Unwrapped {
  const out: SimpleCommand[] = [];
  for (let k = 1; k < argv.length; k++) {
    if (!FIND_EXEC.has(argv[k]!)) continue;
    let end = k + 1;
    while (end < argv.length && argv[end] !== ';' && argv[end] !== '+') end++;
    if (end > k + 1 && spend(steps, end - k)) out.push(plain(argv.slice(k + 1, end)));
    k = end;
  }
  return { commands: out };
}

function script(text: string, steps: Budget): Unwrapped {
  if (!spend(steps, text.length)) return { commands: [] };
  const s = splitScript(text);
  return s.complex === undefined ? { commands: s.simple } : { commands: s.simple, complex: s.complex };
}

/**
 * A not-understood invocation: every argument could be the command or a
 * script, so each is read both ways. Restrictions only: this can add a
 * forbid, never remove one.
 */
function guess(argv: readonly string[], reason: string, steps: Budget): Unwrapped {
  const out: SimpleCommand[] = [];
  for (let k = 1; k < argv.length && k <= MAX_GUESSES; k++) {
    const a = argv[k]!;
    if (a.startsWith('-') || a.length === 0) continue;
    // Each reading copies the rest of the argv: a long one read 32 times is the costly case.
    if (!spend(steps, argv.length - k)) break;
    out.push(plain(argv.slice(k)));
    if (/[\s;&|<>$`()]/.test(a) && spend(steps, a.length)) out.push(...splitScript(a).simple);
  }
  return { commands: out, complex: reason };
}

function plain(argv: readonly string[]): SimpleCommand {
  return {
    argv: [...argv],
    words: argv.map((text) => ({ kind: 'word' as const, text, quoted: true, lit: 0, expanded: false, brace: false })),
    assigns: [],
    redirs: [],
  };
}
