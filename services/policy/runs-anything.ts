// Programs that run whatever their arguments say: shells, interpreters and
// wrappers. A prefix grant naming one of them (`bash`, `python3`, `env`)
// would grant every command there is, so POLICY.md §7 never offers one and
// a stored one covers nothing. Exact grants of such commands stay possible.

export const RUNS_ANYTHING: ReadonlySet<string> = new Set([
  // shells
  'bash', 'sh', 'zsh', 'dash', 'ksh', 'ash', 'fish', 'csh', 'tcsh', 'rbash', 'busybox', 'busybox-sh',
  // wrappers and runners
  'env', 'xargs', 'nice', 'timeout', 'nohup', 'time', 'stdbuf', 'setsid', 'unbuffer', 'ionice', 'chrt', 'flock',
  'exec', 'eval', 'command', 'builtin', 'source', '.', 'sudo', 'doas', 'su', 'runuser', 'watch', 'strace', 'ltrace',
  'script', 'parallel', 'find', 'nsenter', 'chroot', 'unshare', 'ssh', 'taskset', 'prlimit', 'numactl', 'faketime', 'cpulimit', 'setpriv', 'capsh',
  // interpreters and tools whose arguments are programs
  'python', 'python2', 'python3', 'pypy', 'pypy3', 'node', 'nodejs', 'deno', 'bun', 'tsx', 'ts-node', 'ruby', 'perl',
  'php', 'lua', 'luajit', 'tclsh', 'wish', 'R', 'Rscript', 'julia', 'osascript', 'pwsh', 'powershell', 'java', 'jshell',
  'awk', 'gawk', 'mawk', 'nawk', 'sed', 'make', 'gmake', 'npx', 'gdb', 'vim', 'vi', 'nvim', 'emacs',
  // git runs programs its options and config name (`push --receive-pack=…`, `-c core.sshCommand=…`, aliases, hooks)
  'git',
]);

/** Whether any token of a grant prefix names a program that runs anything. */
export function prefixRunsAnything(prefix: readonly string[]): boolean {
  return prefix.some((t) => RUNS_ANYTHING.has(t.slice(t.lastIndexOf('/') + 1)) || /^python[0-9.]*$/.test(t));
}
