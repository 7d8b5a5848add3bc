--[[
  The bytes a key's deleted sessions still hold in Redis: the ones whose keys
  expired by now are credited back first (lazily, at most ARGV[2] per call,
  oldest first; the rest at the next call).
  KEYS[1] key's retired zset (session -> expiry ms)   KEYS[2] key's retired hash (session -> bytes, "~total")
  ARGV[1] now (ms)   ARGV[2] most sessions credited in this call
  Returns the key's retired total after the credit.
]]
creditRetired(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]))
local total = tonumber(redis.call('HGET', KEYS[2], '~total') or '0')
if total <= 0 and redis.call('ZCARD', KEYS[1]) == 0 then redis.call('DEL', KEYS[2]) total = 0 end
return total
