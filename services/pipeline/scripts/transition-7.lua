--[[
  Moves one ledger record from an expected status to a new one and emits its
  events, atomically. The compare-and-set on `status` is what makes every state
  change single-winner: a skip racing a start, a recovery racing a finish.

  KEYS[1] record hash   KEYS[2] open-command counter   KEYS[3] turn state hash
  KEYS[4] event seq counter   KEYS[5] event stream   KEYS[6] session meta hash (see followTtl: only the turn
          state can be created here; the record, the counters and the stream exist since createRecord, which
          gave them the TTL of a deleted session)
  KEYS[7] session byte counter: charged the change in the record's size (dropping `cmd` credits) and the events
  ARGV[1] expected statuses, space separated   ARGV[2] new status
  ARGV[3] "1" refuse when the turn failed at an earlier command (smaller index)   ARGV[4] record index
  ARGV[5] "1" new status is final (and the old one was not)   ARGV[6] "1" new status fails the turn
  ARGV[7] event channel   ARGV[8] events kept per session (0 = all)
  ARGV[9] the id of the run that asks ('' = none): refused when the record is marked by another run (field `run`,
          written by runNext-5.lua when a run takes the list over at it), so a run whose list a re-delivered one took
          over changes nothing more (a finish is sent without: it records a side effect that happened)
  ARGV[10] number of events E, then E pairs (type, JSON without seq), then field/value pairs to HSET; a field
          named "+name" is one the record does not have yet (started_at, result, …): its size is not read first
  Returns {RC.OK, last seq} | {RC.STATUS_MISMATCH, current status ('' = no record)} | {RC.TURN_FAILED, failure marker}
        | {RC.NOT_OWNER, the run that marked the record}
  Uses emitEvent (lib/emitEvent.lua) and followTtl (lib/followTtl.lua).
]]
local now = redis.call('HMGET', KEYS[1], 'status', 'run')
local cur = now[1]
if not cur then return {RC.STATUS_MISMATCH, ''} end
if ARGV[9] ~= '' and now[2] and now[2] ~= ARGV[9] then return {RC.NOT_OWNER, now[2]} end
local ok = false
for s in string.gmatch(ARGV[1], '%S+') do if s == cur then ok = true end end
if not ok then return {RC.STATUS_MISMATCH, cur} end
local n = tonumber(ARGV[4])
if ARGV[3] == '1' then
  local failed = tonumber(redis.call('HGET', KEYS[3], 'failed'))
  if failed and failed < n then return {RC.TURN_FAILED, failed} end
end
local e = tonumber(ARGV[10])
local i = 11 + 2 * e
local delta = 0
-- one HSET for the status and every field; the sizes they replace are read first
local fields = {'status', ARGV[2]}
while i < #ARGV do
  local field = ARGV[i]
  if string.sub(field, 1, 1) == '+' then
    field = string.sub(field, 2)
    delta = delta + #ARGV[i + 1]
  else
    delta = delta + #ARGV[i + 1] - redis.call('HSTRLEN', KEYS[1], field)
  end
  table.insert(fields, field)
  table.insert(fields, ARGV[i + 1])
  i = i + 2
end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[5] == '1' then redis.call('DECR', KEYS[2]) end
if ARGV[6] == '1' then
  -- the turn's failure is its earliest failing command: later ones are skipped, earlier ones are not
  local f = tonumber(redis.call('HGET', KEYS[3], 'failed'))
  if not f or n < f then
    redis.call('HSET', KEYS[3], 'failed', n, 'failed_id', redis.call('HGET', KEYS[1], 'id') or '')
    -- the turn state may be new; every other key here existed when a DELETE gave the session's keys their TTL
    followTtl(KEYS[6], KEYS[3])
  end
end
local seq = 0
for k = 0, e - 1 do
  local charge
  seq, charge = emitEvent(KEYS[4], KEYS[5], ARGV[7], ARGV[8], ARGV[4], ARGV[11 + 2 * k], ARGV[12 + 2 * k])
  delta = delta + charge
end
-- the record's change and its events, charged at once
if delta ~= 0 then redis.call('INCRBY', KEYS[7], delta) end
return {RC.OK, seq}
