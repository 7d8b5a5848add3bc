// Commands that run another command: `env FOO=1 curl x`, `nice -n 5 rm -rf /`,
// `timeout 5 wget y`, `xargs rm`, `bash -c 'curl x'`, `eval "…"`. Rules only
// see an argv prefix, so without this a wrapper would hide a forbidden
// command behind an unmatched (merely prompting) one and an operator could
// approve a forbid by accident. The inner commands found here may only add
// forbid/prompt rules to a part, never an allow (policy.ts).
import { splitScript } from './shell-split.ts';

/** Options that take a separate value, per wrapper (short `-x V` and long `--x V`). */
const VALUE_OPTIONS: Record<string, ReadonlySet<string>> = {
  env: new Set(['-u', '--unset', '-C', '--chdir', '-S', '--split-string']),
  nice: new Set(['-n', '--adjustment']),
  time: new Set(['-f', '--format', '-o', '--output']),
  timeout: new Set(['-s', '--signal', '-k', '--kill-after']),
  stdbuf: new Set(['-i', '-o', '-e', '--input', '--output', '--error']),
  // (-i, -e, -l take only a glued optional value, so they are not listed.)
  xargs: new Set(['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars']),
  exec: new Set(['-a']),
  sudo: new Set(['-u', '--user', '-g', '--group', '-C', '-D', '--chdir', '-h', '--host', '-p', '--prompt', '-r', '--role', '-t', '--type', '-U', '--other-user']),
  doas: new Set(['-u', '-C']),
  nohup: new Set(),
  command: new Set(),
  builtin: new Set(),
  chrt: new Set(),
  ionice: new Set(['-c', '--class', '-n', '--classdata', '-p', '--pid']),
  setsid: new Set(),
  unbuffer: new Set(),
};
const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'ash', 'busybox-sh']);
const NAME_VALUE = /^[A-Za-z_][A-Za-z0-9_]*=/;
const MAX_DEPTH = 4;

/**
 * The argv of every command `argv` runs through a wrapper, nested wrappers
 * included (`env nice curl x` → `nice curl x`, `curl x`). Empty when argv is
 * not a known wrapper or the inner command cannot be found.
 */
export function innerCommands(argv: readonly string[], depth = 0): string[][] {
  if (depth >= MAX_DEPTH || argv.length < 2) return [];
  const program = argv[0]!.slice(argv[0]!.lastIndexOf('/') + 1);
  const direct = unwrapOnce(program, argv);
  const out: string[][] = [];
  for (const inner of direct) {
    if (inner.length === 0) continue;
    out.push(inner);
    out.push(...innerCommands(inner, depth + 1));
  }
  return out;
}

function unwrapOnce(program: string, argv: readonly string[]): string[][] {
  if (SHELLS.has(program)) return shellScript(argv);
  if (program === 'eval') return scriptCommands(argv.slice(1).join(' '));
  const values = VALUE_OPTIONS[program];
  if (values === undefined) return [];
  // `command -v x` / `type`-like queries only print where x is.
  if (program === 'command' && argv.some((a) => a === '-v' || a === '-V')) return [];
  let k = 1;
  while (k < argv.length) {
    const a = argv[k]!;
    if (a === '--') { k++; break; }
    if (program === 'env' && NAME_VALUE.test(a)) { k++; continue; }
    if (program === 'nice' && /^-[0-9]+$/.test(a)) { k++; continue; }
    if (!a.startsWith('-') || a === '-') break;
    k += values.has(a) ? 2 : 1;
  }
  // timeout's first operand is the duration, not the command.
  if (program === 'timeout') k++;
  return k < argv.length ? [argv.slice(k)] : [];
}

/** `bash -c 'script'`, `sh -ec "…"`: the script's commands. Without -c the shell reads a file or stdin we cannot see. */
function shellScript(argv: readonly string[]): string[][] {
  for (let k = 1; k < argv.length; k++) {
    const a = argv[k]!;
    if (a === '-o' || a === '+o') { k++; continue; } // `-o pipefail`
    if (!/^[-+]/.test(a) || a === '-' || a === '--') return [];
    if (a.startsWith('-') && !a.startsWith('--') && a.includes('c')) return k + 1 < argv.length ? scriptCommands(argv[k + 1]!) : [];
  }
  return [];
}

function scriptCommands(script: string): string[][] {
  return splitScript(script).commands;
}
