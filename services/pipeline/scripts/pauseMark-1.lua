--[[
  Marks a session whose container a worker has paused (pause-marks.ts), in
  the session's meta hash, so the next request for it can thaw it ahead of its
  command. Only a live session is marked: the hash of a deleted or expired
  session is never made again by a late pause.
  KEYS[1] session meta hash
  ARGV[1] when the container was paused (ms since the epoch)
  Returns RC.OK when marked, RC.MISSING when the session is gone or deleted.
]]
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'deleted_at') == 1 then return RC.MISSING end
redis.call('HSET', KEYS[1], 'paused_at', ARGV[1])
return RC.OK
