// The staging tree of an upload: the archive laid out as it will land, under
// STAGING/tree, written by the extraction program only. It remembers the kind
// of every path it made, so a name is never resolved through anything but a
// directory the archive itself made: an entry under an archive's symbolic
// link, or a file and a directory of the same name, is refused
// (invalid_archive), and nothing is ever followed out of the tree.
import { mkdirSync, unlinkSync } from 'node:fs';
import { ArchiveError } from './tar-reader.mjs';

const invalid = (p, why) => new ArchiveError('invalid_archive', `entry ${JSON.stringify(p)}: ${why}`, p);

export class StagingTree {
  constructor(root) {
    this.root = root;
    this.kinds = new Map(); // path -> 'dir' | 'file' | 'symlink', of what this tree holds
    mkdirSync(root, 0o755);
  }

  /** The parents of `rel` as directories (made when missing, as tar does). */
  #parents(rel, entry) {
    const slash = rel.lastIndexOf('/');
    if (slash < 0) return;
    const parent = rel.slice(0, slash);
    const kind = this.kinds.get(parent);
    if (kind === 'dir') return;
    if (kind === 'symlink') throw invalid(entry, `it goes through ${JSON.stringify(parent)}, a symbolic link of the archive`);
    if (kind === 'file') throw invalid(entry, `${JSON.stringify(parent)} is a file of the archive, not a directory`);
    this.#parents(parent, entry);
    mkdirSync(`${this.root}/${parent}`, 0o755);
    this.kinds.set(parent, 'dir');
  }

  /**
   * Makes room for an entry (`name`: as the archive spells it, for errors)
   * and returns its absolute staged path: a directory
   * is made (once), a file or link of a name seen before replaces the earlier
   * one (the later entry wins, as in tar).
   */
  place(rel, kind, name = rel) {
    this.#parents(rel, name);
    const abs = `${this.root}/${rel}`;
    const was = this.kinds.get(rel);
    if (kind === 'dir') {
      if (was === undefined) mkdirSync(abs, 0o755);
      else if (was !== 'dir') throw invalid(name, 'a directory of the same name as a file or link of the archive');
      this.kinds.set(rel, 'dir');
      return abs;
    }
    if (was === 'dir') throw invalid(name, 'a file or link of the same name as a directory of the archive');
    if (was !== undefined) unlinkSync(abs);
    this.kinds.set(rel, kind);
    return abs;
  }
}
