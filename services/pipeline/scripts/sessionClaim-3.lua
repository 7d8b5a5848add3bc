--[[
  A session does one thing at a time besides its commands' own queue: an
  upload of its workspace, or a job. Claiming checks that nothing else runs
  and takes the session in one atomic step, so two processes racing cannot
  both win (session-claims.ts).
  KEYS[1] session meta hash (fields running_job, running_job_id)
  KEYS[2] open-command counter   KEYS[3] upload marker (string, with a TTL)
  ARGV[1] op: "claim_upload" | "claim_job" | "touch_upload" | "release_upload" | "release_job"
  ARGV[2] token: the upload's random token, or the job id
  ARGV[3] upload marker TTL in ms (claim_upload, touch_upload)
  ARGV[4] the job's effective settings as JSON (claim_job)
  Returns "ok", or what holds the session: "missing", "deleted", "job", "upload", "commands";
  touch and release return "ok" or "lost" (the claim is not this token's any more).
]]
local op = ARGV[1]
if op == 'touch_upload' then
  if redis.call('GET', KEYS[3]) ~= ARGV[2] then return 'lost' end
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  return 'ok'
end
if op == 'release_upload' then
  if redis.call('GET', KEYS[3]) ~= ARGV[2] then return 'lost' end
  redis.call('DEL', KEYS[3])
  return 'ok'
end
if op == 'release_job' then
  if redis.call('HGET', KEYS[1], 'running_job_id') ~= ARGV[2] then return 'lost' end
  redis.call('HDEL', KEYS[1], 'running_job_id', 'running_job')
  return 'ok'
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HEXISTS', KEYS[1], 'deleted_at') == 1 then return 'deleted' end
if redis.call('HEXISTS', KEYS[1], 'running_job_id') == 1 then return 'job' end
if redis.call('EXISTS', KEYS[3]) == 1 then return 'upload' end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then return 'commands' end
if op == 'claim_upload' then
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
else
  redis.call('HSET', KEYS[1], 'running_job_id', ARGV[2], 'running_job', ARGV[4])
end
return 'ok'
