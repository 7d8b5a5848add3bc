--[[
  Appends one event that is not a ledger change (job events, files_seeded) to
  the session's event stream, numbered from the same counter as the ledger's
  events, so a session's (and its job's) SSE is one ordered stream.
  KEYS[1] event seq counter   KEYS[2] event stream   KEYS[3] event channel   KEYS[4] session meta hash
  KEYS[5] session byte counter (storage-budget.ts)
  ARGV[1] event type          ARGV[2] event JSON without seq/index (starts with '{')
  ARGV[3] events kept per session (0 = all; else the stream is trimmed to about that many)
  Returns the event's seq. Uses emitEvent (lib/emitEvent.lua) and followTtl (lib/followTtl.lua).
]]
local seq, charge = emitEvent(KEYS[1], KEYS[2], KEYS[3], ARGV[3], 0, ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[5], charge)
followTtl(KEYS[4], KEYS[1], KEYS[2], KEYS[5])
return seq
