--[[
  Answers a pending approval exactly once. An answer after expires_at, a second
  answer, or an expiry of an answered token changes nothing. Both keys are the
  session's (one Cluster slot): the caller takes the token out of the global
  pending index after it (approvals.ts; listPending repairs a missed removal).

  KEYS[1] approval hash   KEYS[2] session grants list
  ARGV[1] decision: approve | approve_for_session | reject | expire
  ARGV[2] reason   ARGV[3] decided_by   ARGV[4] now (ms)   ARGV[5] decided_at (ISO)
  ARGV[6] token    ARGV[7] approvals channel
  ARGV[8] grant scope of approve_for_session: exact (field `grant`) | prefix (field `grant_prefix`);
          each field holds one JSON grant per line, pushed one by one
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
