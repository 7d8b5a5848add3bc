import type { FinishWatch } from '../pipeline/index.ts';
import type { TurnPipeline } from './turn-runner.ts';

type OnEvent = Parameters<TurnPipeline['hub']['subscribe']>[1];

/**
 * What a turn follows from before its first command: the session's events
 * (a failure stops the stream) and its finishes (the drain at the end then
 * reads no status, finish-watch.ts). Both are opened together, since each is
 * a Redis round trip on the way to the model call; when one fails the other
 * is closed before the error goes on.
 */
export async function openTurnWatches(pipeline: TurnPipeline, sessionId: string, onEvent: OnEvent): Promise<{ unsubscribe: () => void; watch: FinishWatch | undefined }> {
  const [subscribed, watched] = await Promise.allSettled([pipeline.hub.subscribe(sessionId, onEvent), pipeline.watchFinished?.(sessionId)]);
  if (subscribed.status === 'fulfilled' && watched.status === 'fulfilled') return { unsubscribe: subscribed.value, watch: watched.value };
  if (subscribed.status === 'fulfilled') subscribed.value();
  if (watched.status === 'fulfilled') watched.value?.close();
  throw subscribed.status === 'rejected' ? subscribed.reason : (watched as PromiseRejectedResult).reason;
}
