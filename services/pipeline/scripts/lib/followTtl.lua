--[[
  Shared by the scripts that write a session's keys; redis.ts prepends it.
  followTtl(from, key, ...): once a session is deleted, its keys carry a TTL
  (THINKFLOW_RETENTION_S) set on its meta hash `from`; a key written after
  that (a command finishing late, a turn failed late) gets the same TTL, so the
  session still expires whole. Keys that already have a TTL keep it.
]]
local function followTtl(from, ...)
  local ttl = redis.call('PTTL', from)
  if ttl <= 0 then return end
  for _, key in ipairs({...}) do
    if redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, ttl) end
  end
end
