// Every command starts with an empty HOME, so nothing one command leaves
// there (~/.gitconfig, ~/.npmrc, a Python user-site .pth, ~/.config/...) is
// read by a later one. HOME is the command user's tmpfs; it is emptied
// before each command, when no process of the command user is left (strays.mjs
// ended them after the previous command), so nothing can refill it meanwhile.
// The removal runs with the command user's permissions (everything there is
// its own): in-process for ordinary trees, else through GNU rm (deep trees
// are fine), opening up directories a command made unwritable. When HOME
// cannot be emptied the sandbox is reported broken and replaced, which
// brings a new tmpfs.
import { spawn } from 'node:child_process';
import { chmodSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { asRoot, COMMAND_HOME, commandPrefix, SEPARATED } from './identity.mjs';

const WIPE_TIMEOUT_MS = 20_000;
// Fast path first; only when something resisted, open every directory up and try again.
const WIPE = 'cd -- "$1" || exit 1; find . -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + 2>/dev/null && exit 0; chmod -R u+rwx . ; find . -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +';

export class HomeNotFresh extends Error {}

function isEmpty() {
  try {
    // The executor's effective uid owns HOME, so it can undo a `chmod 000 ~`.
    chmodSync(COMMAND_HOME, 0o700);
  } catch (err) {
    // Options without a HOME tmpfs leave it on the read-only root, where no command can leave anything.
    if (err.code === 'EROFS') return true;
    throw err;
  }
  return readdirSync(COMMAND_HOME).length === 0;
}

// The common case (ordinary files) without starting a process, off the event loop.
async function removeInProcess() {
  await Promise.all(readdirSync(COMMAND_HOME).map((name) => rm(path.join(COMMAND_HOME, name), { recursive: true, force: true })));
}

function wipe() {
  return new Promise((resolve) => {
    const [file, ...args] = [...commandPrefix(), '/bin/sh', '-c', WIPE, 'sh', COMMAND_HOME];
    const child = asRoot(() => spawn(file, args, { cwd: '/', env: { PATH: '/usr/bin:/bin' }, detached: true, stdio: 'ignore' }));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }, WIPE_TIMEOUT_MS);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    child.on('error', done).on('exit', done);
  });
}

/** Empties HOME (a no-op when it already is). Throws HomeNotFresh when it cannot. */
export async function freshHome() {
  // Commands running as root (a deliberate loosening) share the executor's
  // identity; there is no separate HOME to keep clean.
  if (!SEPARATED) return;
  try {
    if (isEmpty()) return;
    try {
      await removeInProcess();
      if (isEmpty()) return;
    } catch {
      // Not an error to report: a tree Node cannot remove (unreadable
      // directories, paths past PATH_MAX) is what GNU rm below is for.
    }
    await wipe();
    if (isEmpty()) return;
  } catch (err) {
    throw new HomeNotFresh(`cannot empty ${COMMAND_HOME}: ${err.message}`);
  }
  throw new HomeNotFresh(`${COMMAND_HOME} is not empty after removing its contents`);
}
