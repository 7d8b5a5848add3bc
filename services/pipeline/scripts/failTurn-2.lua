--[[
  Records a turn failure that has no ledger record (a parse error), keeping the
  earliest failure: commands with a larger ledger index than the marker are skipped.
  KEYS[1] turn state hash   KEYS[2] session meta hash (see followTtl in lib/followTtl.lua)
  ARGV[1] marker (the ledger index of the last command before the failure)  ARGV[2] label
  Returns the marker in force.
]]
local f = tonumber(redis.call('HGET', KEYS[1], 'failed'))
local m = tonumber(ARGV[1])
if not f or m < f then
  redis.call('HSET', KEYS[1], 'failed', m, 'failed_id', ARGV[2])
  followTtl(KEYS[2], KEYS[1])
  return m
end
return f
