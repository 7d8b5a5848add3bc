--[[
  A session does one thing at a time besides its commands' own queue: an
  upload of its workspace, or a job. Claiming checks that nothing else runs
  and takes the session in one atomic step, so two processes racing cannot
  both win (session-claims.ts). Both claims are fields of the session's meta
  hash: `running_job_id` + `running_job` (the job's settings), and `upload`
  ("<token> <expiry ms>"; an expired one is free: a process that died
  mid-upload frees the session by itself). Time is Redis's own (TIME), the
  same for every process.
  KEYS[1] session meta hash   KEYS[2] open-command counter
  ARGV[1] op: "claim_upload" | "claim_job" | "touch_upload" | "release_upload" | "release_job"
  (a REST turn's own check of an upload is openTurn-2.lua's, in the step that takes its number)
  ARGV[2] token: the upload's random token, or the job id
  ARGV[3] upload claim lifetime in ms (claim_upload, touch_upload)
  ARGV[4] the job's settings as JSON (claim_job)
  Returns "ok", or what holds the session: "missing", "deleted", "job", "upload", "commands";
  touch and release return "ok" or "lost" (the claim is not this token's any more);
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local upload = redis.call('HGET', KEYS[1], 'upload')
local uploadToken, uploadUntil = nil, 0
if upload then
  local sp = string.find(upload, ' ', 1, true)
  uploadToken, uploadUntil = string.sub(upload, 1, sp - 1), tonumber(string.sub(upload, sp + 1))
end
local mine = uploadToken == ARGV[2] and uploadUntil > now
if op == 'touch_upload' then
  if not mine then return 'lost' end
  redis.call('HSET', KEYS[1], 'upload', ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
  return 'ok'
end
if op == 'release_upload' then
  if uploadToken ~= ARGV[2] then return 'lost' end
  redis.call('HDEL', KEYS[1], 'upload')
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
if upload and uploadUntil > now then return 'upload' end
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then return 'commands' end
if op == 'claim_upload' then
  redis.call('HSET', KEYS[1], 'upload', ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
else
  redis.call('HSET', KEYS[1], 'running_job_id', ARGV[2], 'running_job', ARGV[4])
end
return 'ok'
