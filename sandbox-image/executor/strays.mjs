// A command's processes end with it: after every bash command, whatever the
// command user still runs (setsid/nohup/double-fork escapes, a process whose
// main thread exited while other threads live on) is killed before the
// result is sent, so nothing of a session runs between two of its commands.
//
// The executor signals them itself (its effective uid is the command user's,
// which the kernel accepts) instead of forking a killer: a command that
// fills the pids limit cannot stop the sweep. Everything found is stopped
// first (a stopped process cannot fork), rounds repeat until a scan finds no
// new process, then everything is killed.
import { readdirSync, readFileSync } from 'node:fs';
import { RUN_AS, SEPARATED } from './identity.mjs';

const MAX_ROUNDS = 400;

export class StraysSurvived extends Error {}

/** Pids of processes of the command user that can still run code (a zombie leader with live threads counts). */
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
    const uid = /\nUid:\s+(\d+)\s+(\d+)\s+(\d+)/.exec(status);
    if (!uid || ![uid[1], uid[2], uid[3]].some((u) => Number(u) === RUN_AS.uid)) continue;
    const state = /\nState:\s+(\S)/.exec(status)?.[1];
    const threads = Number(/\nThreads:\s+(\d+)/.exec(status)?.[1] ?? '1');
    if ((state === 'Z' || state === 'X') && threads <= 1) continue;
    found.push(Number(name));
  }
  return found;
}

function signal(pids, sig) {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // gone meanwhile, or not ours after all
    }
  }
}

/** Kills every leftover process of the command user; resolves with how many there were. Throws StraysSurvived. */
export async function killStrays() {
  if (!SEPARATED) return 0;
  const seen = new Set();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const left = commandProcesses();
    if (left.length === 0) return seen.size;
    const fresh = left.filter((p) => !seen.has(p));
    for (const p of left) seen.add(p);
    // Stop until no new process appears, then kill all; a process that is
    // stopped cannot fork, so a fork loop cannot outrun the sweep.
    if (fresh.length > 0 && round < MAX_ROUNDS / 2) signal(fresh, 'SIGSTOP');
    else signal(left, 'SIGKILL');
    if (fresh.length === 0) await new Promise((r) => setTimeout(r, 1));
  }
  throw new StraysSurvived(`processes of uid ${RUN_AS.uid} survived ${MAX_ROUNDS} kill rounds`);
}
