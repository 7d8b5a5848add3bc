--[[
  The step of a session's run job (queues.ts, session-run.ts): drops the entry of the command
  it just finished from the head of the run list and names the next one, in
  one atomic step, so an enqueue (createRecord's RPUSH, which reports the
  list's length) either sees this entry still there (and this run job goes on
  to its own entry) or sees the list empty (and starts a run job itself).
  It also reads what the worker needs to run the next command (the reads of
  Ledger.loadForExecution, execution-load.ts), so that costs no round trip.

  KEYS[1] run list (record indexes, ledger order)
  KEYS[2] the session's BullMQ queue meta hash: field `paused` while a job is paused
  KEYS[3] session meta hash   KEYS[4] grants list
  KEYS[5] record key prefix (keys.recordPrefix): the next record is KEYS[5] .. index (same tag, same slot)
  ARGV[1] index just finished ('' = none: the run job starts; RUN_LINGER = it lingered and steps again)
  ARGV[2] '1' = linger when the list is empty: RUN_LINGER is pushed (an enqueue then wakes this run
          job instead of starting another, createRecord) and {RC.LINGER} returned
  Returns {RC.OK} (list empty: the run job ends) | {RC.LINGER} | {RC.PAUSED}
        | {RC.OK, next index, its record (flat HGETALL), meta deleted_at, meta running_job, grants}
  The head is dropped only when it is that index: a re-delivered run job never drops another's entry.
  A run job that starts drops a dead holder's RUN_LINGER; one that lingered and finds its RUN_LINGER
  gone (a re-delivered run took over) ends without touching the list.
  Uses followTtl (lib/followTtl.lua).
]]
local head = redis.call('LRANGE', KEYS[1], 0, 1)
if ARGV[1] == RUN_LINGER and head[1] ~= RUN_LINGER then return {RC.OK} end
if (ARGV[1] ~= '' and head[1] == ARGV[1]) or (ARGV[1] == '' and head[1] == RUN_LINGER) then
  redis.call('LPOP', KEYS[1])
  table.remove(head, 1)
end
if not head[1] then
  if ARGV[2] ~= '1' then return {RC.OK} end
  redis.call('RPUSH', KEYS[1], RUN_LINGER)
  followTtl(KEYS[3], KEYS[1]) -- a deleted session's list must still expire with it
  return {RC.LINGER}
end
if redis.call('HEXISTS', KEYS[2], 'paused') == 1 then return {RC.PAUSED} end
local rec = KEYS[5] .. head[1]
local meta = redis.call('HMGET', KEYS[3], 'deleted_at', 'running_job')
return {RC.OK, head[1], redis.call('HGETALL', rec), meta[1], meta[2], redis.call('LRANGE', KEYS[4], 0, -1)}
