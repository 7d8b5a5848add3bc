--[[
  Answers a pending approval exactly once. An answer after expires_at, a second
  answer, or an expiry of an answered token changes nothing. All four keys are the
  session's (one Cluster slot): the caller takes the token out of the global
  pending index after it (approvals.ts; listPending repairs a missed removal).

  An `approve_edited` answer writes the edited command into the ledger record in the same step, so
  whichever worker sees the answer runs the edited command (the record may still be `queued`: the
  approval is stored just before the record moves to `awaiting_approval`).

  KEYS[1] approval hash   KEYS[2] session grants list
  KEYS[3] the command's ledger record hash (read and written by approve_edited only)
  KEYS[4] session byte counter: charged the change in the record's size (approve_edited only)
  ARGV[1] decision: approve | approve_for_session | approve_edited | reject | expire
  ARGV[2] reason   ARGV[3] decided_by   ARGV[4] now (ms)   ARGV[5] decided_at (ISO)
  ARGV[6] token    ARGV[7] approvals channel
  ARGV[8] grant scope of approve_for_session: exact (field `grant`) | prefix (field `grant_prefix`);
          each field holds one JSON grant per line, pushed one by one
  ARGV[9] approve_edited: the record's new `base` JSON (the edited command, `edited_from`)
  ARGV[10] approve_edited: the record's new `cmd` JSON (the full edited command the worker runs)
  Returns RC.OK | RC.UNKNOWN | RC.EXPIRED | RC.TOO_EARLY (expire asked before expires_at) | {RC.ANSWERED, earlier decision}
]]
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return RC.UNKNOWN end
if status ~= 'pending' then return {RC.ANSWERED, status} end
local expires = tonumber(redis.call('HGET', KEYS[1], 'expires_ms'))
local now = tonumber(ARGV[4])
local decision = ARGV[1]
if decision == 'expire' then
  if now < expires then return RC.TOO_EARLY end
elseif now >= expires then
  decision = 'expire'
end
if decision == 'expire' then
  redis.call('HSET', KEYS[1], 'status', 'expired', 'decision', 'expired', 'reason', 'approval timed out',
    'decided_by', 'system', 'decided_at', ARGV[5])
  redis.call('PUBLISH', ARGV[7], ARGV[6])
  if ARGV[1] == 'expire' then return RC.OK end
  return RC.EXPIRED
end
if decision == 'approve_edited' and (ARGV[9] or '') ~= '' then
  local rec = redis.call('HGET', KEYS[3], 'status')
  -- a record that no longer waits will not run: nothing to rewrite
  if rec == 'queued' or rec == 'awaiting_approval' then
    local delta = #ARGV[9] + #ARGV[10] - redis.call('HSTRLEN', KEYS[3], 'base') - redis.call('HSTRLEN', KEYS[3], 'cmd')
    redis.call('HSET', KEYS[3], 'base', ARGV[9], 'cmd', ARGV[10])
    if delta ~= 0 then redis.call('INCRBY', KEYS[4], delta) end
  end
end
redis.call('HSET', KEYS[1], 'status', decision, 'decision', decision, 'reason', ARGV[2],
  'decided_by', ARGV[3], 'decided_at', ARGV[5])
if decision == 'approve_for_session' then
  local field = 'grant'
  if ARGV[8] == 'prefix' then field = 'grant_prefix' end
  redis.call('HSET', KEYS[1], 'grant_scope', ARGV[8] or 'exact')
  local grants = redis.call('HGET', KEYS[1], field)
  if grants then
    for line in string.gmatch(grants, '[^\n]+') do redis.call('RPUSH', KEYS[2], line) end
  end
end
redis.call('PUBLISH', ARGV[7], ARGV[6])
return RC.OK
