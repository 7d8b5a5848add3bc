--[[
  Opens a REST turn (`POST /v1/sessions/:id/commands`, turn-open.ts) in one step: the session must exist, not be
  deleted and not be held by an upload (sessionClaim-2.lua's `upload` field, same format); then the turn takes its
  number. The caller sends it in the same round trip as the key's live-slot claim and storage check (other slots),
  and gives the number back when one of those refuses, so a refused turn leaves no gap in the session's turns.

  KEYS[1] session meta hash   KEYS[2] the session's turn counter
  ARGV[1] "open" | "give_back"   ARGV[2] give_back: the turn number to give back
  Returns, for "open": {"ok", turn, running_job ('' = none), paused_at ('' = not paused)} | {"missing"} | {"deleted"}
          | {"upload"} (nothing written);
          for "give_back": 1 when the counter was still at that turn (now one less), else 0 (a later turn took the
          next number: the gap stays rather than two turns sharing a number)
]]
if ARGV[1] == 'give_back' then
  if redis.call('GET', KEYS[2]) == ARGV[2] then
    redis.call('DECR', KEYS[2])
    return 1
  end
  return 0
end
if redis.call('HEXISTS', KEYS[1], 'json') == 0 then return {'missing'} end
local meta = redis.call('HMGET', KEYS[1], 'deleted_at', 'upload', 'running_job', 'paused_at')
if meta[1] then return {'deleted'} end
if meta[2] then
  local sp = string.find(meta[2], ' ', 1, true)
  local t = redis.call('TIME')
  if tonumber(string.sub(meta[2], sp + 1)) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return {'upload'} end
end
return {'ok', redis.call('INCR', KEYS[2]), meta[3] or '', meta[4] or ''}
