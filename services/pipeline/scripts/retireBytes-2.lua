--[[
  A session of the key is deleted: its byte total moves from the open sessions'
  sum to the key's retired sessions, where it keeps counting until its keys
  expire (THINKFLOW_RETENTION_S), so a create/fill/delete loop frees nothing early.
  Retired sessions whose keys are gone by now are credited first (at most 100,
  oldest first), and both keys expire with the last retired session, so the
  list names no session longer than its keys live, checked or not (dev mode).
  Both keys are the API key's (one Cluster slot); the session's byte counter
  is in the session's slot, so the caller reads it first and passes its value.
  KEYS[1] key's retired zset (session -> expiry ms)
  KEYS[2] key's retired hash (session -> bytes, plus field "~total")
  ARGV[1] session id   ARGV[2] expiry (ms, when the session's keys go away)   ARGV[3] now (ms)
  ARGV[4] the session's bytes (its counter, keys.sessionBytes)
  Returns the key's retired total. A second call for the same session changes nothing.
]]
creditRetired(KEYS[1], KEYS[2], ARGV[3], 100)
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  local b = tonumber(ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[1], b)
  redis.call('HINCRBY', KEYS[2], '~total', b)
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
-- The newest expiry wins (GT); a key without one gets it (GT treats no expiry as infinite).
for i = 1, 2 do
  if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIREAT', KEYS[i], ARGV[2])
  else redis.call('PEXPIREAT', KEYS[i], ARGV[2], 'GT') end
end
return tonumber(redis.call('HGET', KEYS[2], '~total') or '0')
