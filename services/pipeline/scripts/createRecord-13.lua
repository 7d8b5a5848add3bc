--[[
  Creates one ledger record and emits its event, atomically, so a record never
  exists without its event and the ledger order equals the counter order.
  Every key is the session's (one hash tag, one Cluster slot). The global
  `busy` index is not touched here: Ledger.create writes it before (busy-index.ts).

  KEYS[1] ledger counter        KEYS[2] ids hash ("turn:id" -> index)
  KEYS[3] open-command counter  KEYS[4] turn state hash (field "failed")
  KEYS[5] turn commands list    KEYS[6] event seq counter
  KEYS[7] event stream
  KEYS[8] record key prefix (keys.recordPrefix): the record is KEYS[8] .. index, the same
          hash tag, so the same slot as the declared prefix (the index is only known here)
  KEYS[9] session meta hash (its TTL, once deleted, is given to every key written here); `run_until`: a run
          job lingers on the empty run list till then (ms of Redis's clock, runNext)
  KEYS[10] session byte counter: charged the record's and the event's stored sizes (storage-budget.ts)
  KEYS[11] run list: a record created `queued` appends its index (queues.ts)
  KEYS[12] the session's BullMQ queue meta hash (field `paused`)   KEYS[13] grants list
  ARGV[1] "turn:id"   ARGV[2] status    ARGV[3] "1" status is final    ARGV[4] "1" status fails the turn
  ARGV[5] "1" refuse when the turn already failed (caller then records it skipped);
          a failure marker always has a smaller index than a record created now
  ARGV[6] full command JSON   ARGV[7] base JSON   ARGV[8] result JSON ("" = none)
  ARGV[9] finished_at ("" = none)  ARGV[10] event channel  ARGV[11] events kept per session (0 = all)
  ARGV[12] event type   ARGV[13] event JSON without seq/index
  ARGV[14] what the model said before the command ("" = nothing kept): field `preceding`, read for an approval's context
  ARGV[15] SHA-1 of the session's `running_job` the caller decided the command under ("" = no job): the
          caller reads neither the job nor `deleted_at` before; both are checked here, in the same write
  Returns {RC.OK, index, seq, open, run, wake[, run_owner, running_job, grants]}
  | {RC.DUPLICATE, existing index} | {RC.TURN_FAILED, failure marker}
  | {RC.MISSING} (the session is gone or deleted) | {RC.STALE_JOB, running_job now or ""}
  (open = the session's non-final count after this record; run = the run list's length after it, 0 when
  the record is not queued: 1 means no run job works on the session, so the caller starts one;
  wake = 1 when the list was empty but a run job lingers on it (`run_until` not past): the caller
  wakes that run instead of starting one; with wake = 1 and the queue not paused, the record is the run's next
  step, as runNext would name it once woken: the run holding the list (`run_owner`), the session's running job
  ('' = none) and the grants come with it, so a run lingering in the enqueuing process takes the command
  without a runNext round trip (run-linger.ts))
  Uses emitEvent (lib/emitEvent.lua) and followTtl (lib/followTtl.lua).
]]
local meta = redis.call('HMGET', KEYS[9], 'json', 'deleted_at', 'running_job', 'run_until', 'run_owner')
if not meta[1] or meta[2] then return {RC.MISSING} end
local job = meta[3] or ''
if (job == '' and ARGV[15] ~= '') or (job ~= '' and redis.sha1hex(job) ~= ARGV[15]) then return {RC.STALE_JOB, job} end
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then return {RC.DUPLICATE, tonumber(existing)} end
if ARGV[5] == '1' then
  local failed = redis.call('HGET', KEYS[4], 'failed')
  if failed then return {RC.TURN_FAILED, failed} end
end
local n = redis.call('INCR', KEYS[1])
local rec = KEYS[8] .. n
local id = string.sub(ARGV[1], string.find(ARGV[1], ':', 1, true) + 1)
local fields = {'status', ARGV[2], 'id', id, 'cmd', ARGV[6], 'base', ARGV[7], 'injected', '0'}
if ARGV[8] ~= '' then table.insert(fields, 'result'); table.insert(fields, ARGV[8]) end
if ARGV[9] ~= '' then table.insert(fields, 'finished_at'); table.insert(fields, ARGV[9]) end
if ARGV[14] and ARGV[14] ~= '' then table.insert(fields, 'preceding'); table.insert(fields, ARGV[14]) end
redis.call('HSET', rec, unpack(fields))
redis.call('HSET', KEYS[2], ARGV[1], n)
redis.call('RPUSH', KEYS[5], n)
local open = 0
if ARGV[3] ~= '1' then open = redis.call('INCR', KEYS[3]) end
local run = 0
if ARGV[2] == 'queued' then run = redis.call('RPUSH', KEYS[11], n) end
if ARGV[4] == '1' then
  local f = tonumber(redis.call('HGET', KEYS[4], 'failed'))
  if not f or n < f then redis.call('HSET', KEYS[4], 'failed', n, 'failed_id', id) end
end
-- The record inside the event was rendered before its index existed: it carries
-- the placeholder "index":-1 as its first key (a quote inside a JSON string is
-- escaped, so the placeholder cannot occur in user text).
local data = ARGV[13]
local s, e = string.find(data, '"index":-1', 1, true)
if s then data = string.sub(data, 1, s - 1) .. '"index":' .. n .. string.sub(data, e + 1) end
-- fields, ids and list entries cost about 200 bytes beyond the values
local seq, charge = emitEvent(KEYS[6], KEYS[7], ARGV[10], ARGV[11], n, ARGV[12], data)
redis.call('INCRBY', KEYS[10], #ARGV[6] + #ARGV[7] + #ARGV[8] + #ARGV[9] + #(ARGV[14] or '') + 2 * #ARGV[1] + 200 + charge)
followTtl(KEYS[9], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[10], KEYS[11], rec)
local wake = 0
if run == 1 and meta[4] then
  local t = redis.call('TIME')
  if tonumber(meta[4]) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then wake = 1 end
end
if wake == 1 and meta[5] and redis.call('HEXISTS', KEYS[12], 'paused') == 0 then
  return {RC.OK, n, seq, open, run, wake, meta[5], job, redis.call('LRANGE', KEYS[13], 0, -1)}
end
return {RC.OK, n, seq, open, run, wake}
