// The bounds of a sandbox call (README.md). Every field has its default here;
// services/config maps the THINKFLOW_SANDBOX_CALL_* settings onto them.

export type SandboxCallOptions = {
  /** how long a call waits for any worker to take it; then 503 `sandbox_unavailable`. @default 5000 */
  pickupMs?: number;
  /** how long a taken call waits for its answer (after the upload's last byte, for an upload); then 504 `sandbox_timeout`. @default 120000 */
  answerMs?: number;
  /** a stream (either way) that moves no frame for this long is cut with `sandbox_timeout`. @default 30000 */
  stallMs?: number;
  /** an answer collected in memory (a file, a change list) larger than this is refused, 502 `sandbox_answer_too_large`. @default 33554432 */
  maxAnswerBytes?: number;
  /** bytes of one frame (a body is cut into frames of at most this). @default 262144 */
  frameBytes?: number;
  /** frames one pipe holds in Redis before its writer waits: window × frameBytes is a stream's Redis footprint. @default 8 */
  window?: number;
  /** a waiting side re-reads Redis this often even without a wake-up (a wake-up lost in a reconnect costs at most this). @default 250 */
  pollMs?: number;
  /** calls one worker serves at once; it takes no more from the list meanwhile (other workers do). @default 16 */
  callsPerWorker?: number;
};

export type ResolvedCallOptions = Required<SandboxCallOptions>;

export function resolveCallOptions(o: SandboxCallOptions = {}): ResolvedCallOptions {
  return {
    pickupMs: o.pickupMs ?? 5_000,
    answerMs: o.answerMs ?? 120_000,
    stallMs: o.stallMs ?? 30_000,
    maxAnswerBytes: o.maxAnswerBytes ?? 32 * 1024 * 1024,
    frameBytes: o.frameBytes ?? 256 * 1024,
    window: o.window ?? 8,
    pollMs: o.pollMs ?? 250,
    callsPerWorker: o.callsPerWorker ?? 16,
  };
}

/** How long a call's keys live after their last write: a side that died leaves nothing behind for longer. */
export function keyTtlMs(o: ResolvedCallOptions): number {
  return o.pickupMs + o.answerMs + 2 * o.stallMs;
}
