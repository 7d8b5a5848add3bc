import type Docker from 'dockerode';
import type { EgressDirs } from './egress-dirs.ts';
import { logSandboxError } from './log.ts';
import { containerName, volumeName } from './names.ts';
import type { WorkspaceImages } from './workspace-fs.ts';

export class SandboxCleanupError extends Error {
  readonly code = 'sandbox_cleanup_failed';
}

const notFoundOk = (err: { statusCode?: number }) => {
  if (err.statusCode !== 404) throw err;
};

/**
 * Takes a session's sandbox apart: container, volume, then its image (kept
 * and detached for `stop`, unlinked for `remove`) and, when given (`remove`
 * only: a proxy may listen there across a stop), its egress directory. Every step is tried even
 * when an earlier one failed, each failure is logged with the session id,
 * and the call then fails, so a caller never reports a cleanup that left
 * something behind. With an image, each step is O(1) whatever the tree.
 */
export async function teardownSession(
  docker: Docker,
  prefix: string,
  sessionId: string,
  images: WorkspaceImages | null,
  keepImage: boolean,
  egress?: Pick<EgressDirs, 'remove'>,
): Promise<void> {
  const failed: string[] = [];
  const step = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      failed.push(what);
      logSandboxError(sessionId, `sandbox teardown: ${what} failed`, err);
    }
  };
  await step('container removal', () => docker.getContainer(containerName(prefix, sessionId)).remove({ force: true }).catch(notFoundOk));
  await step('volume removal', () => docker.getVolume(volumeName(prefix, sessionId)).remove().catch(notFoundOk));
  if (images) {
    await step(keepImage ? 'workspace image detach' : 'workspace image removal', () =>
      keepImage ? images.detach(sessionId) : images.destroy(sessionId));
  }
  if (egress) await step('egress directory removal', () => egress.remove(sessionId));
  if (failed.length) throw new SandboxCleanupError(`sandbox of session ${sessionId} not fully removed: ${failed.join(', ')} failed`);
}
