// Who runs what inside the container. The executor starts as root with only
// the capabilities it needs to start commands as another user (SETUID,
// SETGID, SETPCAP); every command runs as THINKFLOW_RUN_AS (1000:1000) with
// no capability at all. The executor itself then lives with its effective
// ids set to the command user, so its file tools have exactly a command's
// permissions (files stay shared both ways), while its real and saved uid
// stay 0: a process of the command user can neither signal, trace nor open
// /proc/<executor>/fd (the kernel compares against the real/saved uid, and
// the changed euid makes the process non-dumpable). Only spawning a command
// briefly takes root back (asRoot).
import { toolConfigEnv } from './tool-config.mjs';

const [RUN_UID, RUN_GID] = (process.env.THINKFLOW_RUN_AS || '1000:1000').split(':').map(Number);

export const RUN_AS = { uid: RUN_UID, gid: RUN_GID };
/** The command user's HOME, a tmpfs emptied before every command (home.mjs). */
export const COMMAND_HOME = process.env.THINKFLOW_COMMAND_HOME || '/home/sandbox';
/** True when commands run under a uid of their own (the default); false in a loosened setup. */
export const SEPARATED = process.getuid() === 0 && RUN_UID !== 0;

/** Called once at start: from now on, only asRoot() is root. */
export function dropToCommandUser() {
  if (!SEPARATED) return;
  process.setgroups([RUN_GID]);
  process.setegid(RUN_GID);
  process.seteuid(RUN_UID);
}

/** Runs a synchronous `fn` with root's effective ids (spawning a command needs them). */
export function asRoot(fn) {
  if (!SEPARATED) return fn();
  process.seteuid(0);
  process.setegid(0);
  try {
    return fn();
  } finally {
    process.setegid(RUN_GID);
    process.seteuid(RUN_UID);
  }
}

/** argv prefix that turns the spawned root child into the command user with every capability gone. */
export function commandPrefix() {
  if (!SEPARATED) return [];
  return ['setpriv', `--reuid=${RUN_UID}`, `--regid=${RUN_GID}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
}

/**
 * The whole environment of a command: nothing inherited, no BASH_ENV, no
 * start-up files, and no tool configuration a command could have written.
 */
export function commandEnv() {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: COMMAND_HOME,
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    SHELL: '/bin/bash',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    ...toolConfigEnv(COMMAND_HOME),
  };
}
