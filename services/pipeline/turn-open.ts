import { withIds } from '../log/index.ts';
import { PipelineError } from './errors.ts';
import type { FinishWatch } from './finish-watch.ts';
import type { Keys } from './keys.ts';
import type { OwnerCaps } from './owner-caps.ts';
import type { PipelineRedis } from './redis.ts';
import type { Sessions } from './sessions.ts';
import type { StorageBudget } from './storage-budget.ts';

// A REST turn opens in one round trip (`POST /v1/sessions/:id/commands`): the
// session's state and the turn's number (scripts/openTurn-2.lua: it exists, is
// not deleted, no upload holds it), the key's live-slot claim and its storage
// budget (other slots, so their own commands), and the subscription that sees
// the turn's commands finish, all sent in one event-loop turn and so one socket
// write per connection (redis-write-batch.ts). Before, these were three round
// trips one after the other: the session read, the claims, then the turn number.
// Refused in the fixed order of the API: 404, 410, 409 (upload), 429 (live
// cap), 429 storage_quota_exceeded; a refused turn gives its number back, and
// the live slot its claim added when the session is gone or deleted (for that
// one round trip a deleted session this process still remembers counts as
// live: a claim of the same key at its cap meanwhile is refused).
// (Review helper-60: a slot given back on an upload's or the budget's refusal
// was one another request of the same session had just relied on.)

export type TurnOpenDeps = {
  redis: PipelineRedis; keys: Keys; sessions: Sessions;
  live: Pick<OwnerCaps, 'claimLive' | 'releaseLive'>; storage: Pick<StorageBudget, 'assert'>;
  watch: (sid: string) => Promise<FinishWatch>;
};

/** An open turn: its number, the watch of its commands' finishes (close it), and when the session's container was paused (ms), if it is. */
export type OpenedTurn = { turn: number; watch: FinishWatch; pausedAt: number | null };

type OpenReply = [string, number?, string?, string?];

const REFUSALS: Record<string, (sid: string) => PipelineError> = {
  missing: (sid) => new PipelineError('session_not_found', `session ${sid} not found`),
  deleted: (sid) => new PipelineError('session_deleted', `session ${sid} was deleted`),
  upload: (sid) => new PipelineError('session_busy', `session ${sid} is busy: an upload into the workspace is in progress`, { session_id: sid, held_by: 'upload' }),
};

/** Opens a turn of `sid`, whose key is `owner`. @throws PipelineError (the first refusal in the API's order) */
export async function openRestTurn(d: TurnOpenDeps, sid: string, owner: string | null): Promise<OpenedTurn> {
  const [watch, opened, live, budget] = await Promise.allSettled([
    d.watch(sid),
    d.redis.openTurn(d.keys.sessionMeta(sid), d.keys.turnCounter(sid), 'open', '') as Promise<OpenReply>,
    d.live.claimLive(owner, sid),
    d.storage.assert(owner),
  ]);
  const reply = opened.status === 'fulfilled' ? opened.value : null;
  const refusal = opened.status === 'rejected' ? opened.reason
    : reply![0] !== 'ok' ? REFUSALS[reply![0]]?.(sid) ?? new Error(`openTurn answered ${String(reply![0])}`)
      : live.status === 'rejected' ? live.reason
        : budget.status === 'rejected' ? budget.reason
          : watch.status === 'rejected' ? watch.reason : null;
  if (reply && reply[0] !== 'ok') d.sessions.forget(sid); // read afresh next time: gone, or deleted
  if (refusal === null) {
    d.sessions.sawJob(sid, reply![2] || null);
    return { turn: Number(reply![1]), watch: (watch as PromiseFulfilledResult<FinishWatch>).value, pausedAt: reply![3] ? Number(reply![3]) : null };
  }
  // A live slot goes back only for a session that cannot be using a container (gone, deleted): another request of a
  // live one (a read, an upload, a job) may rely on the entry this claim added, and would never add it again.
  const dead = reply !== null && (reply[0] === 'missing' || reply[0] === 'deleted');
  await giveBack(d, sid, owner, { watch, turn: reply?.[0] === 'ok' ? Number(reply[1]) : null, added: dead && live.status === 'fulfilled' && live.value });
  throw refusal;
}

/** What a refused turn took: its number (unless a later turn took the next), a live slot it added, its watch. */
async function giveBack(
  d: TurnOpenDeps, sid: string, owner: string | null, took: { watch: PromiseSettledResult<FinishWatch>; turn: number | null; added: boolean },
): Promise<void> {
  if (took.watch.status === 'fulfilled') took.watch.value.close();
  const undo: Promise<unknown>[] = [];
  if (took.turn !== null) undo.push(d.redis.openTurn(d.keys.sessionMeta(sid), d.keys.turnCounter(sid), 'give_back', took.turn));
  if (took.added) undo.push(d.live.releaseLive(owner, sid));
  for (const r of await Promise.allSettled(undo)) {
    // The refusal is what the client needs; a failed undo costs a gap in the turns or a live slot until its window ends.
    if (r.status === 'rejected') withIds({ session_id: sid }).warn({ err: r.reason }, 'a refused turn could not give back what it took');
  }
}
