// The return codes of the Lua scripts, one map for both sides (BullMQ's
// `ErrorCode` style): redis.ts prepends `local RC = {OK = 1, …}`, built from
// this map, to every script, so a script returns `{RC.DUPLICATE, n}` and its
// caller compares with `ScriptCode.DUPLICATE`; no bare number on either side.
// A reply is the code alone or `{code, detail}` (the detail each code names).

export const ScriptCode = {
  /** done; createRecord: {OK, index, seq, open, run list length}; transition: {OK, last seq}; runNext: {OK, next entry?} */
  OK: 1,
  /** createRecord: the turn already has a command with this id; detail: its index */
  DUPLICATE: 2,
  /** createRecord, transition: the turn failed at an earlier command; detail: the failure marker */
  TURN_FAILED: 3,
  /** transition: the record is not in an expected status; detail: its status ('' = no record) */
  STATUS_MISMATCH: 4,
  /** idemHeld, idemAnswer: the Idempotency-Key no longer holds this request's value; nothing written */
  NOT_HOLDER: 5,
  /** answerApproval: no such approval */
  UNKNOWN: 6,
  /** answerApproval: it expired (now, or earlier) */
  EXPIRED: 7,
  /** answerApproval: an `expire` asked before expires_at; nothing written */
  TOO_EARLY: 8,
  /** answerApproval: answered earlier; detail: that decision */
  ANSWERED: 9,
  /** jobMessagePush: the job's message list is full; nothing written */
  FULL: 10,
  /** runNext: the session's queue is paused (a paused job); the run job ends and `resume` starts another */
  PAUSED: 11,
  /** pauseMark, createRecord: the session is gone or deleted; nothing written */
  MISSING: 12,
  /** createRecord: the job running on the session is not the one the caller decided under; detail: its running_job now ('' = none); nothing written */
  STALE_JOB: 13,
  /** runNext: the run list is empty and the run job lingers on it (run state `until`) */
  LINGER: 14,
  /** transition: the record is marked by another run than the one that asked (a re-delivered run took the list over at it); detail: that run; nothing written */
  NOT_OWNER: 15,
} as const;

export type ScriptCode = (typeof ScriptCode)[keyof typeof ScriptCode];

/** The Lua side of the map: `local RC = {OK = 1, …}`. */
export const LUA_CODES = `local RC = {${Object.entries(ScriptCode).map(([k, v]) => `${k} = ${v}`).join(', ')}}`;

/** The code of a script's reply (`code` or `{code, …}`). */
export function codeOf(reply: unknown): number {
  return Number(Array.isArray(reply) ? reply[0] : reply);
}
