--[[
  Shared by every script that writes session events; redis.ts prepends it to
  them when it registers them (a Redis script cannot call another one).
  emitEvent(seqKey, streamKey, channel, keep, index, type, json):
  numbers the event from the session's counter, prepends seq and index to its
  JSON (which starts with '{'), appends it to the stream as entry `seq-0`
  (trimmed to about `keep` entries unless keep is '0') and publishes it for
  live waiters. Returns the seq and the event's stored size, which the caller
  charges to the session's byte counter (storage-budget.ts; a trim is not
  credited) in the one INCRBY it makes for all it wrote.
]]
local function emitEvent(seqKey, streamKey, channel, keep, index, type, json)
  local seq = redis.call('INCR', seqKey)
  local payload = '{"seq":' .. seq .. ',"index":' .. index .. ',' .. string.sub(json, 2)
  if keep == '0' then
    redis.call('XADD', streamKey, seq .. '-0', 't', type, 'd', payload)
  else
    redis.call('XADD', streamKey, 'MAXLEN', '~', keep, seq .. '-0', 't', type, 'd', payload)
  end
  redis.call('PUBLISH', channel, payload)
  return seq, #payload + #type + 64
end
