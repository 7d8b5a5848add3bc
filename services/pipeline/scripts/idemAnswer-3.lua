--[[
  The request holding an Idempotency-Key stores its answer for replays, and the
  answer's bytes count against the API key's storage budget until the answer
  expires, like a deleted session's (storage-budget.ts): an entry
  "idem:<key hash>" in the key's retired zset and hash. Expired entries are
  credited first (at most 100), so a key reused after its expiry is charged anew.
  KEYS[1] the key's string (keys.idempotency)   KEYS[2] key's retired zset   KEYS[3] key's retired hash
  ARGV[1] the holder's "running" value   ARGV[2] the "done" value   ARGV[3] expiry (ms, absolute)
  ARGV[4] the budget entry's name   ARGV[5] its bytes   ARGV[6] now (ms)
  Returns RC.OK when stored, RC.NOT_HOLDER when the key is no longer the holder's (nothing written).
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return RC.NOT_HOLDER end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
creditRetired(KEYS[2], KEYS[3], ARGV[6], 100)
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[4]) or '0')
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
redis.call('HINCRBY', KEYS[3], '~total', tonumber(ARGV[5]) - old)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
for i = 2, 3 do
  if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIREAT', KEYS[i], ARGV[3])
  else redis.call('PEXPIREAT', KEYS[i], ARGV[3], 'GT') end
end
return RC.OK
