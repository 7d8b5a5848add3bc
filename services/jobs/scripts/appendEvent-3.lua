--[[
  Appends one job event to the session's event stream, numbered from the same
  counter as the pipeline's events, so a job's SSE is one ordered stream.
  KEYS[1] event seq counter   KEYS[2] event stream   KEYS[3] event channel
  ARGV[1] event type          ARGV[2] event JSON without seq/index (starts with '{')
  ARGV[3] stream MAXLEN (approximate)
  Returns the event's seq.
]]
local seq = redis.call('INCR', KEYS[1])
local payload = '{"seq":' .. seq .. ',"index":0,' .. string.sub(ARGV[2], 2)
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], seq .. '-0', 't', ARGV[1], 'd', payload)
redis.call('PUBLISH', KEYS[3], payload)
return seq
