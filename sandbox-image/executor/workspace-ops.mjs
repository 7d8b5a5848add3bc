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
