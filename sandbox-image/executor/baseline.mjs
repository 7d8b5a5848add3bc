// Taking the baseline: every regular file and symlink of the workspace
// (not `.git`, not the sandbox's own entries) with its mode, stat key and
// blob id, and its content once per distinct blob (baseline-store.mjs).
import { blobHasher, contentChunks } from './blob-io.mjs';
import { BaselineWriter, baselineSettled, recordFailure } from './baseline-store.mjs';
import { gitMode, treeEntries } from './tree-walk.mjs';

/** Takes a new baseline of `root` and makes it current. */
export function takeBaseline(root) {
  const started = performance.now();
  const writer = new BaselineWriter();
  try {
    for (const entry of treeEntries(root)) writer.add(entry, gitMode(entry.st), contentChunks(entry), blobHasher(entry.st.size));
    const r = writer.commit();
    return { ...r, ms: Math.round(performance.now() - started) };
  } catch (err) {
    writer.abandon();
    // The reason stays for the change list; a full workspace may refuse even that, and then the error alone tells.
    try {
      recordFailure(`${err.code ?? 'error'}: ${err.message}`);
    } catch (recordErr) {
      process.stderr.write(`baseline: the failure could not be recorded either: ${recordErr.message}\n`);
    }
    throw err;
  }
}

/** Takes one only when there is none yet (the first command of a workspace that had no seeding or upload). */
export function ensureBaseline(root) {
  if (baselineSettled()) return { taken: false };
  return { taken: true, ...takeBaseline(root) };
}
