// The two workspace-out questions the executor answers itself, without a
// `docker exec` and a fresh Node (workspace-out.mjs does the rest): the
// change list (GET …/changes), and whether a baseline exists (asked in the
// slot of a command that needs one). Both run as root, synchronously (asRoot: the
// store is root's, and unreadable files are still read), so nothing else of
// the executor runs meanwhile and the walk's changes of directory are its
// own; a change list of 10,000 files takes about a tenth of a second. The
// parsed manifest is kept until the baseline is replaced.
import { assertPrivateArea, baselineSettled, knownSettled, NoBaseline, openBaseline } from './baseline-store.mjs';
import { listChanges } from './changes.mjs';
import { asRoot } from './identity.mjs';
import { WORKSPACE } from './paths.mjs';
import { WalkRaced } from './tree-walk.mjs';

let kept = null;
/** A longer answer is not sent on the executor's channel (its frames are capped): the host asks workspace-out.mjs instead. */
const MAX_ANSWER_CHARS = 8 * 1024 * 1024;

/** True when the workspace has no baseline and none failed; false too where baselines are not supported (no private area). */
export function baselineMissing() {
  if (knownSettled()) return false;
  try {
    return asRoot(() => {
      assertPrivateArea();
      return !baselineSettled();
    });
  } catch (err) {
    if (err.code === 'baseline_unsupported') return false;
    throw err;
  }
}

let preloadTries = 0;
/**
 * Reads the baseline's manifest ahead of the first change list (a job asks
 * for it at its end), in idle time after a command: the baseline was taken by
 * another program (workspace-out.mjs), so this process has not read it. At
 * most three tries per executor (a session's first command may come before
 * its baseline), so a workspace that never has one costs no root switches
 * per command. None yet, or none possible here: the change list reports why
 * when it is asked; anything else is logged.
 */
export function preloadBaseline() {
  if (kept || preloadTries >= 3) return;
  preloadTries += 1;
  try {
    asRoot(() => {
      assertPrivateArea();
      kept = openBaseline(kept);
    });
  } catch (err) {
    if (err instanceof NoBaseline || err.code === 'baseline_unsupported') return;
    process.stderr.write(`executor: reading the baseline ahead failed: ${err && err.message}\n`);
  }
}

/** `changes` -> {baseline_at, changes} | {failed: {code, message}}. */
export function workspaceOp(op) {
  try {
    return asRoot(() => {
      assertPrivateArea();
      kept = openBaseline(kept);
      const answer = { baseline_at: kept.baselineAt, changes: listChanges(WORKSPACE, kept) };
      if (JSON.stringify(answer).length > MAX_ANSWER_CHARS) return { failed: { code: 'answer_too_large', message: `${answer.changes.length} changes` } };
      return answer;
    });
  } catch (err) {
    if (err instanceof NoBaseline || err instanceof WalkRaced || err.code === 'baseline_unsupported') return { failed: { code: err.code, message: err.message } };
    throw err;
  }
}
