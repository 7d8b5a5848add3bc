--[[
  Appends one steering message to a job's list unless it is full
  (jobs/job-control.ts), so a flood of messages cannot grow it without end.
  KEYS[1] the job's message list (keys.jobMessages)
  ARGV[1] the message JSON   ARGV[2] most messages held   ARGV[3] the list's TTL (s)
  Returns {RC.OK, length} | RC.FULL (nothing written).
]]
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return RC.FULL end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {RC.OK, n}
