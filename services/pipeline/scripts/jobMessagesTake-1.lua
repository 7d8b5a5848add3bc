--[[
  Reads and empties a job's message list in one step, so a message is taken
  exactly once (jobs/job-control.ts).
  KEYS[1] the job's message list (keys.jobMessages)
  Returns the messages, oldest first (empty when none).
]]
local all = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return all
