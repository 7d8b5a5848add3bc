--[[
  A session of the key is deleted: its byte total moves from the open sessions'
  sum to the key's retired sessions, where it keeps counting until its keys
  expire (THINKFLOW_RETENTION_S), so a create/fill/delete loop frees nothing early.
  KEYS[1] session byte counter   KEYS[2] key's retired zset (session -> expiry ms)
  KEYS[3] key's retired hash (session -> bytes, plus field "~total")
  ARGV[1] session id   ARGV[2] expiry (ms, when the session's keys go away)
  Returns the key's retired total. A second call for the same session changes nothing.
]]
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then
  local b = tonumber(redis.call('GET', KEYS[1]) or '0')
  redis.call('HSET', KEYS[3], ARGV[1], b)
  redis.call('HINCRBY', KEYS[3], '~total', b)
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return tonumber(redis.call('HGET', KEYS[3], '~total') or '0')
