// Workspace quota enforced by the kernel: the workspace is its own ext4
// filesystem (the host made it with size = quota and a fixed inode count;
// THINKFLOW_WORKSPACE_FS=loop). Nothing to watch or reserve: a write,
// fallocate or create past it fails with ENOSPC right there. What is left is
// telling a command that failed for lack of space from one that failed for
// another reason, so it reports `workspace_full`.
import { statfsSync } from 'node:fs';

// GNU tools, Python and Node print strerror's text. EFBIG comes from the
// file-size limit (RLIMIT_FSIZE = the quota), which stops one file first.
const NO_SPACE = /No space left on device|ENOSPC|Disk quota exceeded|EDQUOT|File too large|EFBIG/;
const MiB = 1024 ** 2;

export class FilesystemQuota {
  kernel = true;

  constructor(root) {
    this.root = root;
  }

  /** Never refuses ahead: the filesystem itself is the limit. */
  exceeds() {
    return false;
  }

  /** No room left for a file's data (under 1 MiB or 0.5 % free) or for a new inode (under 16 or 0.5 % free). */
  full() {
    const s = statfsSync(this.root);
    const freeBytes = Number(s.bavail) * Number(s.bsize);
    const totalBytes = Number(s.blocks) * Number(s.bsize);
    const freeInodes = Number(s.ffree);
    return freeBytes < Math.max(MiB, totalBytes / 200) || freeInodes < Math.max(16, Number(s.files) / 200);
  }

  /** A failed command failed for lack of space when it said so, or when it left the filesystem full. */
  commandHitLimit(result) {
    // A timeout or a cancel is reported as such, whatever the space left.
    if (result.error_code !== 'nonzero_exit' && result.error_code !== 'killed') return false;
    return NO_SPACE.test(result.stderr ?? '') || this.full();
  }
}
