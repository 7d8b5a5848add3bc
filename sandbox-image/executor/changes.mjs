// What changed since the baseline: one walk of the workspace against the
// baseline's manifest. An entry whose stat key (mode, size, inode, mtime,
// ctime) is the baseline's is unchanged without being read (a command cannot
// set ctime, and a write moves it), unless it is racy (baseline-store.mjs);
// otherwise it is hashed, and an equal blob and mode is unchanged too (a
// `touch`). Directories are not entries (git tracks none).
import { hashEntry } from './blob-io.mjs';
import { gitMode, walkTree } from './tree-walk.mjs';

function sameStat(old, mode, st) {
  return old[0] === mode && old[1] === Number(st.size) && old[2] === String(st.ino)
    && old[3] === String(st.mtimeNs) && old[4] === String(st.ctimeNs);
}

/**
 * Walks `root` against `base` (openBaseline()). For each added or modified
 * entry, `onChange({path, change, mode, size, oid, entry, old})` is awaited
 * while the entry can still be read (`old` = the manifest row, null when
 * added); deleted ones follow the walk (`entry` null). Resolves with the
 * number of entries walked.
 */
export async function walkChanges(root, base, onChange) {
  const seen = new Set();
  await walkTree(root, async (entry) => {
    seen.add(entry.path);
    const { st } = entry;
    const mode = gitMode(st);
    const old = Object.hasOwn(base.entries, entry.path) ? base.entries[entry.path] : null;
    if (old && sameStat(old, mode, st) && !base.racy(old)) return;
    const { oid, size } = hashEntry(entry);
    if (old && old[5] === oid && old[0] === mode) return;
    await onChange({ path: entry.path, change: old ? 'modified' : 'added', mode, size, oid, entry, old });
  });
  const gone = Object.keys(base.entries).filter((p) => !seen.has(p)).sort();
  for (const path of gone) await onChange({ path, change: 'deleted', mode: null, size: 0, oid: null, entry: null, old: base.entries[path] });
  return seen.size;
}

/** The change list of API.md: `{path, change, bytes}` sorted by path (bytes now; 0 when deleted). */
export async function listChanges(root, base) {
  const changes = [];
  await walkChanges(root, base, (c) => {
    changes.push({ path: c.path, change: c.change, bytes: c.size });
  });
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // Shown as UTF-8 (a name that is not valid UTF-8 shows replacement characters; the patch keeps its bytes).
  return changes.map((c) => ({ ...c, path: Buffer.from(c.path, 'latin1').toString('utf8') }));
}
