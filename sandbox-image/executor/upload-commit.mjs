// The commit of a workspace upload: the staging tree of upload-extract.mjs
// merged into the workspace, all or nothing. Runs in the executor (effective
// uid = the command user's, so with exactly a command's permissions) while it
// holds the session's one execution slot, after every process of the command
// user was ended: nothing else of the session runs meanwhile, and the tree is
// exactly what the extraction program made (a 0700 directory of its own).
//
// 1. A dry run walks the tree against the workspace: a name new to the
//    workspace moves whole (a directory with all it holds, one rename);
//    directories on both sides merge; a file or link replaces a file or link.
//    A directory against a file or a link, either way, is a conflict: nothing
//    is ever placed through a symbolic link of the workspace.
// 2. Each rename is journalled (a replaced file is moved aside first), so a
//    failure midway (a directory a command made read-only, no space) is undone.
// 3. Every symbolic link of the archive must resolve inside the workspace as
//    it now is (through links that were already there too); otherwise undone.
import { lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { ArchiveError } from './tar-reader.mjs';
import { assertNormalised } from './archive-entry.mjs';
import { resolveInside, ToolError, WORKSPACE } from './paths.mjs';

const invalid = (p, why) => new ArchiveError('invalid_archive', `entry ${JSON.stringify(p)}: ${why}`, p);
const conflict = (p, why) => new ArchiveError('workspace_conflict', `entry ${JSON.stringify(p)}: ${why}`, p);
const NAMES = { dir: 'a directory', file: 'a file', symlink: 'a symbolic link' };

function kindAt(abs) {
  // Most names of an upload are new to the workspace: no exception per missing one.
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (st === undefined) return null;
  return st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'file';
}

/** Step 1: the renames, in order (parents before what they hold); throws on the first name that cannot be placed. */
function plan(tree, stagingRel) {
  const moves = [];
  const walk = (rel) => {
    for (const name of readdirSync(rel ? path.join(tree, rel) : tree)) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === stagingRel) throw invalid(r, 'names the upload staging directory');
      const src = kindAt(path.join(tree, r));
      const dst = kindAt(path.join(WORKSPACE, r));
      if (dst === null) moves.push({ rel: r, replace: false });
      else if (src === 'dir' && dst === 'dir') walk(r);
      else if (src === 'dir' || dst === 'dir') throw conflict(r, `${NAMES[src]} of the archive where the workspace has ${NAMES[dst]}`);
      else moves.push({ rel: r, replace: true });
    }
  };
  walk('');
  return moves;
}

/** Step 2. Returns the journal; on a failure, undoes what it did and rethrows. */
function apply(tree, aside, moves) {
  const journal = [];
  let n = 0;
  try {
    for (const m of moves) {
      const dst = path.join(WORKSPACE, m.rel);
      if (m.replace) {
        if (n === 0) mkdirSync(aside, 0o700);
        const old = path.join(aside, `r${++n}`);
        renameSync(dst, old);
        journal.push({ from: old, to: dst });
      }
      const src = path.join(tree, m.rel);
      renameSync(src, dst);
      journal.push({ from: dst, to: src });
    }
  } catch (err) {
    rollback(journal);
    throw err;
  }
  return journal;
}

function rollback(journal) {
  for (const step of journal.reverse()) {
    try {
      renameSync(step.from, step.to);
    } catch (err) {
      // Nothing else can be done here; the answer still says the upload failed.
      process.stderr.write(`executor: undoing an upload rename failed (${step.from} -> ${step.to}): ${err.message}\n`);
    }
  }
}

/**
 * Merges STAGING/tree into the workspace, all or nothing. `symlinks`: the
 * archive's links (workspace-relative), checked once in place.
 * @throws ArchiveError (invalid_archive, workspace_conflict) naming the entry, or a file system error (all undone)
 */
export async function commitUpload(stagingRel, symlinks) {
  if (!Array.isArray(symlinks)) throw new ArchiveError('bad_request', 'symlinks must be a list');
  for (const p of symlinks) assertNormalised(p);
  const staging = path.join(WORKSPACE, stagingRel);
  const tree = path.join(staging, 'tree');
  if (kindAt(tree) !== 'dir') return; // an archive of nothing but the root's own entry
  const journal = apply(tree, path.join(staging, 'replaced'), plan(tree, stagingRel));
  for (const p of symlinks) {
    try {
      await resolveInside(p);
    } catch (err) {
      rollback(journal);
      if (!(err instanceof ToolError)) throw err;
      const why = err.code === 'path_outside_workspace' ? 'leads outside the workspace through links already there' : `does not resolve (${err.message})`;
      throw invalid(p, `the symbolic link ${why}`);
    }
  }
}
