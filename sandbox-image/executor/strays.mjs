// A command's processes end with it: after every bash command, whatever the
// command user still runs (setsid/nohup/double-fork escapes included) is
// killed before the result is sent, so nothing of a session runs between
// two of its commands.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { asRoot, RUN_AS, SEPARATED } from './identity.mjs';

const MAX_ROUNDS = 200;

/** Pids of live (not zombie) processes whose real uid is the command user's. */
export function commandProcesses() {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid || name === '1') continue;
    let status;
    try {
      status = readFileSync(`/proc/${name}/status`, 'latin1');
    } catch {
      continue; // exited meanwhile
    }
    const uid = /\nUid:\s+(\d+)/.exec(status);
    const state = /\nState:\s+(\S)/.exec(status);
    if (uid && Number(uid[1]) === RUN_AS.uid && state && state[1] !== 'Z' && state[1] !== 'X') found.push(Number(name));
  }
  return found;
}

// kill(-1) from a process of the command user reaches every process of
// that user at once (the kernel holds the task list while it signals, so a
// fork loop cannot outrun it) and nothing else.
function killAllOfCommandUser() {
  asRoot(() => spawnSync('/bin/kill', ['-9', '-1'], { uid: RUN_AS.uid, gid: RUN_AS.gid, stdio: 'ignore', env: {} }));
}

/** Kills every leftover process of the command user; resolves with how many were found first. */
export async function killStrays() {
  if (!SEPARATED) return 0;
  let first = -1;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const left = commandProcesses();
    if (first < 0) first = left.length;
    if (left.length === 0) return first;
    if (round % 5 === 0) killAllOfCommandUser();
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`processes of uid ${RUN_AS.uid} survived ${MAX_ROUNDS} kill rounds`);
}
