import { log } from '../log/index.ts';
import type { Approvals } from './approvals.ts';
import type { CommandLifecycle } from './command-lifecycle.ts';
import { PipelineError } from './errors.ts';
import type { Sandboxes } from './sandboxes.ts';
import type { Ledger } from './ledger.ts';
import { SESSION_DELETED, SESSION_DELETED_APPROVAL } from './lifecycle/results.ts';
import type { OwnerCaps } from './owner-caps.ts';
import type { SessionRetention } from './retention.ts';
import type { Sessions } from './sessions.ts';
import type { StorageBudget } from './storage-budget.ts';

export interface SessionDeleteDeps {
  sessions: Sessions;
  ledger: Ledger;
  lifecycle: CommandLifecycle;
  approvals: Approvals;
  sandboxes: Sandboxes;
  caps: OwnerCaps;
  retention: SessionRetention;
  storage: StorageBudget;
}

/**
 * Removes the sandbox; queued commands become skipped and pending approvals
 * withdrawn. Only once nothing of the session is left on the host are its
 * caps released and every key of it given THINKFLOW_RETENTION_S; until then
 * the session stays (503 `cleanup_failed`) and DELETE can be tried again.
 */
export async function deleteSession(d: SessionDeleteDeps, sid: string, owner: string | null): Promise<void> {
  // A DELETE repeated after one that finished: nothing to redo, and nothing to undo (an unmark after a failure here
  // would leave a live session whose meta expires, and its new keys with it).
  if (await d.sessions.deleteFinished(sid)) return;
  // Marked first, so no new work starts a container for it meanwhile.
  await d.sessions.markDeleted(sid);
  const records = await d.ledger.list(sid);
  for (const r of records) {
    if (r.status === 'queued') await d.lifecycle.skip(r, SESSION_DELETED);
    // A command waiting for an operator must not run after its session is
    // gone (it would start a new container for it): its approval is withdrawn.
    else if (r.status === 'awaiting_approval' && r.approval) {
      await d.approvals.answer(r.approval.token, 'reject', SESSION_DELETED_APPROVAL, 'system');
    }
  }
  try {
    await d.sandboxes.remove(sid);
  } catch (err) {
    await d.sessions.unmarkDeleted(sid);
    log().error({ err, session_id: sid }, 'session delete: its sandbox could not be removed; the session stays');
    throw new PipelineError('cleanup_failed', `the sandbox of session ${sid} could not be removed; try DELETE again`);
  }
  await d.retention.expire(sid, records.flatMap((r) => (r.approval ? [r.approval.token] : [])));
  // Its bytes count for the key until its keys (TTL set just above) are gone; moved before it leaves the open set, so never uncounted.
  await d.storage.retire(owner, sid, Date.now() + d.retention.retentionS * 1000);
  await d.caps.releaseSession(owner, sid);
  await d.caps.releaseLive(owner, sid);
}
