--[[
  The step of a session's run job (queues.ts, session-run.ts): drops the entry of the command
  it just finished from the head of the run list and names the next one, in
  one atomic step, so an enqueue (createRecord's RPUSH, which reports the
  list's length) either sees this entry still there (and this run job goes on
  to its own entry) or sees the list empty (and starts a run job itself).

  KEYS[1] run list (record indexes, ledger order)
  KEYS[2] the session's BullMQ queue meta hash: field `paused` while a job is paused
  ARGV[1] index just finished ('' = none: the run job starts)
  Returns {RC.OK} (list empty: the run job ends) | {RC.OK, next index} | {RC.PAUSED}
  The head is dropped only when it is that index: a re-delivered run job never drops another's entry.
]]
local head = redis.call('LRANGE', KEYS[1], 0, 1)
if ARGV[1] ~= '' and head[1] == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  table.remove(head, 1)
end
if not head[1] then return {RC.OK} end
if redis.call('HEXISTS', KEYS[2], 'paused') == 1 then return {RC.PAUSED} end
return {RC.OK, head[1]}
