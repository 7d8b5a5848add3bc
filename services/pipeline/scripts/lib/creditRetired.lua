--[[
  Shared by retireBytes and retiredBytes; redis.ts prepends it.
  creditRetired(zset, hash, now, limit): a key's retired sessions whose keys
  expired by `now` stop counting: their bytes leave the hash's "~total", and
  they leave the zset (session -> expiry ms) and the hash (session -> bytes).
  At most `limit` sessions, oldest first; the rest at the next call.
]]
local function creditRetired(zset, hash, now, limit)
  local gone = redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'LIMIT', 0, limit)
  for _, sid in ipairs(gone) do
    local b = tonumber(redis.call('HGET', hash, sid) or '0')
    redis.call('HINCRBY', hash, '~total', -b)
    redis.call('HDEL', hash, sid)
    redis.call('ZREM', zset, sid)
  end
end
