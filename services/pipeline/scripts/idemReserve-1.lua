--[[
  Takes an Idempotency-Key for one request, or tells what holds it.
  KEYS[1] the key's string (keys.idempotency)
  ARGV[1] the "running" value (state, lease token, fingerprint)   ARGV[2] lease (ms)
  Returns nil when taken (the caller runs the request), else the value there now.
]]
local cur = redis.call('GET', KEYS[1])
if cur then return cur end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
