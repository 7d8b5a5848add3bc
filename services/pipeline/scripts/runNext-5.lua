--[[
  The step of a session's run job (queues.ts, session-run.ts): drops the entry of the command
  it just finished from the head of the run list and names the next one, in
  one atomic step, so an enqueue (createRecord's RPUSH, which reports the
  list's length) either sees this entry still there (and this run job goes on
  to its own entry) or sees the list empty (and starts a run job itself, or
  wakes this one while it lingers).
  It also reads what the worker needs to run the next command (the reads of
  Ledger.loadForExecution, execution-load.ts), so that costs no round trip.

  KEYS[1] run list (record indexes, ledger order)
  KEYS[2] the session's BullMQ queue meta hash: field `paused` while a job is paused
  KEYS[3] session meta hash: also `run_owner` (the run holding the list) and `run_until` (it lingers till then,
          ms of Redis's clock; createRecord reads it)
  KEYS[4] grants list
  KEYS[5] record key prefix (keys.recordPrefix): the next record is KEYS[5] .. index (same tag, same slot)
  ARGV[1] index just finished ('' = none: the run starts, or steps again after a linger)
  ARGV[2] the run's id   ARGV[3] '1' = the run starts: it takes the list over (`run_owner`), and marks the record at
          its head (field `run`): that is the only record an earlier run may still act on (it read it before), and
          transition-7.lua refuses a run's change to a record marked by another run
  ARGV[4] ms to linger on an empty list ('0' = the run ends there)
  Returns {RC.OK} (the run ends: its list is empty, or another run took it over) | {RC.LINGER} | {RC.PAUSED}
        | {RC.OK, next index, its record (flat HGETALL), meta deleted_at, meta running_job, grants}
  The head is dropped only when it is that index: a step sent twice (a reply lost to a reconnect) drops
  nothing the second time, and a run whose list a re-delivered run took over ends touching nothing.
]]
local meta = redis.call('HMGET', KEYS[3], 'deleted_at', 'running_job', 'run_owner')
if ARGV[3] == '1' then
  if redis.call('HEXISTS', KEYS[3], 'json') == 1 then redis.call('HSET', KEYS[3], 'run_owner', ARGV[2]) end
elseif meta[3] and meta[3] ~= ARGV[2] then
  return {RC.OK}
end
local head = redis.call('LRANGE', KEYS[1], 0, 1)
if ARGV[3] == '1' and head[1] then
  local marked = KEYS[5] .. head[1]
  if redis.call('EXISTS', marked) == 1 then redis.call('HSET', marked, 'run', ARGV[2]) end
end
if ARGV[1] ~= '' and head[1] == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  table.remove(head, 1)
end
if not head[1] then
  -- A deleted or gone session takes no command any more: nothing to linger for.
  if tonumber(ARGV[4]) <= 0 or meta[1] or redis.call('HEXISTS', KEYS[3], 'json') == 0 then
    redis.call('HDEL', KEYS[3], 'run_until')
    return {RC.OK}
  end
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[3], 'run_until', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4]))
  return {RC.LINGER}
end
if redis.call('HEXISTS', KEYS[2], 'paused') == 1 then
  redis.call('HDEL', KEYS[3], 'run_until')
  return {RC.PAUSED}
end
local rec = KEYS[5] .. head[1]
return {RC.OK, head[1], redis.call('HGETALL', rec), meta[1], meta[2], redis.call('LRANGE', KEYS[4], 0, -1)}
