// What changed since the baseline: one walk of the workspace against the
// baseline's manifest. An entry whose stat key (mode, size, inode, mtime,
// ctime) is the baseline's is unchanged without being read (a command cannot
// set ctime, and a write moves it), unless it is racy (baseline-store.mjs);
// otherwise it is hashed, and an equal blob and mode is unchanged too (a
// `touch`). Directories are not entries (git tracks none).
import { hashEntry } from './blob-io.mjs';
import { gitMode, treeEntries } from './tree-walk.mjs';

const sameStat = (old, mode, st) => old[0] === mode && old[1] === st.size && old[2] === st.ino && old[3] === st.mtimeMs && old[4] === st.ctimeMs;

/**
 * The changes of `root` against `base` (openBaseline()), one by one:
 * `{path, change, mode, size, oid, entry, old}` (`old` = the manifest row,
 * null when added). An added or modified one comes while its `entry` can
 * still be read (the walk waits at it); deleted ones follow the walk, with
 * `entry` null. `hashAdded` false: an added entry is not read (its `oid` is
 * null, its size the walk's lstat), for a list that shows no blob ids.
 */
export function* changedEntries(root, base, hashAdded = true) {
  const seen = new Set();
  for (const entry of treeEntries(root)) {
    seen.add(entry.path);
    const { st } = entry;
    const mode = gitMode(st);
    const old = Object.hasOwn(base.entries, entry.path) ? base.entries[entry.path] : null;
    if (old && sameStat(old, mode, st) && !base.racy(old)) continue;
    // A symbolic link's lstat size is its target's length in bytes, as hashEntry reads it.
    if (!old && !hashAdded) { yield { path: entry.path, change: 'added', mode, size: st.size, oid: null, entry, old }; continue; }
    const { oid, size } = hashEntry(entry);
    if (old && old[5] === oid && old[0] === mode) continue;
    yield { path: entry.path, change: old ? 'modified' : 'added', mode, size, oid, entry, old };
  }
  const gone = Object.keys(base.entries).filter((p) => !seen.has(p)).sort();
  for (const path of gone) yield { path, change: 'deleted', mode: null, size: 0, oid: null, entry: null, old: base.entries[path] };
}

/** The change list of API.md: `{path, change, bytes}` sorted by path (bytes now; 0 when deleted). */
export function listChanges(root, base) {
  const changes = [];
  // An added file is listed by its size alone: reading it would only give a blob id the list does not show.
  for (const c of changedEntries(root, base, false)) changes.push({ path: c.path, change: c.change, bytes: c.size });
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // Shown as UTF-8 (a name that is not valid UTF-8 shows replacement characters; the patch keeps its bytes).
  return changes.map((c) => ({ ...c, path: Buffer.from(c.path, 'latin1').toString('utf8') }));
}

/**
 * Runs the change list once over the executor's own files (read only, an
 * empty base: all "added"), so that V8 has compiled the walk and the hashing
 * before a job's first change list needs them: that first list paid ~4 ms of
 * lazy compilation in a fresh executor (bench/RESULTS.md, bench:flows).
 */
export function warmUpChanges(dir) {
  const empty = { entries: {}, racy: () => false };
  // Hashed once (a modified file is, in a real list), then listed.
  for (const c of changedEntries(dir, empty)) void c.oid;
  return listChanges(dir, empty).length;
}
