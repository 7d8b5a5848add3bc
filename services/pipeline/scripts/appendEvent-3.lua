--[[
  Appends one event that is not a ledger change (job events, files_seeded) to
  the session's event stream, numbered from the same counter as the ledger's
  events, so a session's (and its job's) SSE is one ordered stream.
  KEYS[1] event seq counter   KEYS[2] event stream   KEYS[3] event channel
  ARGV[1] event type          ARGV[2] event JSON without seq/index (starts with '{')
  ARGV[3] events kept per session (0 = all; else the stream is trimmed to about that many)
  Returns the event's seq.
]]
local seq = redis.call('INCR', KEYS[1])
local payload = '{"seq":' .. seq .. ',"index":0,' .. string.sub(ARGV[2], 2)
if ARGV[3] == '0' then
  redis.call('XADD', KEYS[2], seq .. '-0', 't', ARGV[1], 'd', payload)
else
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], seq .. '-0', 't', ARGV[1], 'd', payload)
end
redis.call('PUBLISH', KEYS[3], payload)
return seq
