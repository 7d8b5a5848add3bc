import type { LedgerRecord, Pipeline } from '../pipeline/index.ts';
import type { Logger } from '../log/index.ts';
import { emptyCounts, type JobState } from './job-state.ts';

// A job's opening: its running state saved and its session followed
// (approvals move its status, finished commands its counts). Both go out
// together, and the first model call is sent beside them: they must be in
// place before the first turn opens (its `turn_started` comes after the
// running state) or a file is seeded, not before the request leaves.

export type OpeningDeps<V extends JobState> = {
  pipeline: Pick<Pipeline, 'entries'> & { hub: Pick<Pipeline['hub'], 'subscribe'> };
  /** Persists the view; must not throw. */
  save(view: V): Promise<void>;
};

export class JobOpening {
  readonly #ready: Promise<void>;
  #unwatch = () => {};

  constructor(deps: OpeningDeps<JobState>, view: JobState, logger: Logger) {
    this.#ready = Promise.allSettled([watchSession(deps, view, logger), deps.save(view)]).then(([watching, saved]) => {
      if (watching.status === 'fulfilled') this.#unwatch = watching.value;
      for (const r of [watching, saved]) if (r.status === 'rejected') throw r.reason;
    });
    // Awaited by wait() (the failure is thrown there) or close() (logged there if nobody waited): never unhandled.
    this.#ready.catch(() => undefined);
  }

  /** Resolves once the opening is in place; throws its failure. */
  wait(): Promise<void> {
    return this.#ready;
  }

  /**
   * Stops following the session, once the opening settled. Its failure is logged unless it is what the job ended
   * with (`endedWith`): a job that stopped first, or failed on something else meanwhile, would otherwise hide it.
   */
  async close(logger: Logger, endedWith: unknown): Promise<void> {
    await this.#ready.catch((err: unknown) => {
      if (err !== endedWith) logger.warn({ err }, 'the job\'s opening failed (its running state or its session\'s events)');
    });
    this.#unwatch();
  }
}

/** Follows the session: approvals move the job's status; command counts follow each finished command. */
async function watchSession(deps: OpeningDeps<JobState>, view: JobState, logger: Logger): Promise<() => void> {
  // Counts follow each finished command (not only turn ends), so job lists
  // stay live during a long turn; bursts cost one ledger read per 250 ms.
  let timer: NodeJS.Timeout | null = null;
  const countsSoon = () => {
    timer ??= setTimeout(() => {
      timer = null;
      refreshCounts(deps.pipeline, view).then(() => deps.save(view))
        .catch((err: unknown) => logger.warn({ err }, 'updating command counts failed'));
    }, 250);
  };
  const unsubscribe = await deps.pipeline.hub.subscribe(view.session_id, (e) => {
    if (e.type === 'command_finished') return countsSoon();
    if (e.type === 'approval_requested' && view.status === 'running') view.status = 'awaiting_approval';
    else if (e.type === 'approval_resolved' && view.status === 'awaiting_approval') view.status = 'running';
    else return;
    void deps.save(view);
  });
  return () => {
    unsubscribe();
    if (timer) clearTimeout(timer);
  };
}

/** The job's command counts from its part of the ledger. */
export async function refreshCounts(pipeline: { entries(sid: string): Promise<LedgerRecord[]> }, view: JobState): Promise<void> {
  const counts = emptyCounts();
  for (const r of await pipeline.entries(view.session_id)) {
    // The model's commands only: REST ones are not the job's, a validator's are in `validation` and its events.
    if (r.flow === 'api' || r.flow === 'validator') continue;
    counts.total++;
    if (r.status in counts) counts[r.status as keyof typeof counts]++;
    else if (r.status === 'interrupted') counts.failed++;
  }
  view.commands = counts;
}
