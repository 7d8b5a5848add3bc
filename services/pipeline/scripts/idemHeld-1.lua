--[[
  A step only the request holding an Idempotency-Key may take: the value must
  still be the one it wrote (its lease may have lapsed and another request taken the key).
  KEYS[1] the key's string (keys.idempotency)
  ARGV[1] the holder's "running" value   ARGV[2] "extend" (the lease: PEXPIRE ARGV[3] ms) or "release" (DEL)
  Returns RC.OK when done, RC.NOT_HOLDER when the key is no longer the holder's.
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return RC.NOT_HOLDER end
if ARGV[2] == 'extend' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
return RC.OK
