-- The stall watchdog's look, once a reaper pass: the runs under a claim whose last progress (KEYS 1) is
-- older than the bound. One whose lease is live (renewed by its worker, not parked) is stalled: recorded
-- once with its session, since when it made no progress, its lease's owner and its attempt, and counted.
-- One that ended, or whose lease lapsed or was parked, is not followed any more: a claim, or its worker's
-- next renewal, follows it again. Marking off (runs.stallSeconds 0), the look only forgets.
-- A repeat of this call (its reply lost with the connection) finds the runs recorded: nothing is marked
-- or counted twice.
-- KEYS: 1 runs' progress, 2 runs stalled, 3 stalls counter
-- ARGV: 1 now ms, 2 bound ms, 3 mark ('1' or '0'), 4 batch, 5 run key prefix, 6 lease key prefix
-- Returns the number of runs stalled now, then (run id, record json) for each newly stalled one.
local now = tonumber(ARGV[1])
local mark = ARGV[3] == '1'
if not mark then
  redis.call('DEL', KEYS[2])
end
-- A record whose run the watchdog no longer follows (it ended or was forgotten by a script that found no
-- ``stalled`` on its hash: one recorded before the hash said so) goes: the records are few, usually none.
for _, run_id in ipairs(redis.call('HKEYS', KEYS[2])) do
  if not redis.call('ZSCORE', KEYS[1], run_id) then
    redis.call('HDEL', KEYS[2], run_id)
  end
end
-- The runs stalled already are the oldest of the candidates: each pass looks at them again, and a batch more.
local limit = redis.call('HLEN', KEYS[2]) + tonumber(ARGV[4])
-- Silent for longer than the bound: its last progress strictly before now - bound.
local cutoff = string.format('(%d', now - tonumber(ARGV[2]))
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff, 'WITHSCORES', 'LIMIT', 0, limit)
local result = {0}
for i = 1, #found, 2 do
  local run_id = found[i]
  local run = redis.call('HMGET', ARGV[5] .. run_id, 'status', 'sessionKey', 'attempts')
  local lease = {}
  if is_active(run[1]) and run[2] then
    lease = redis.call('HMGET', ARGV[6] .. run[2], 'runId', 'owner', 'expiresAt')
  end
  if lease[1] ~= run_id or lease[2] == 'suspended' or tonumber(lease[3] or '0') <= now then
    left_watch(KEYS[1], KEYS[2], run_id)
  elseif mark and redis.call('HEXISTS', KEYS[2], run_id) == 0 then
    local record = cjson.encode({
      sessionKey = run[2], since = tonumber(found[i + 1]), owner = lease[2] or '',
      attempt = tonumber(run[3] or '1'),
    })
    redis.call('HSET', KEYS[2], run_id, record)
    -- Said on the run's hash too: the scripts of its hot path delete the record only where it is.
    redis.call('HSET', ARGV[5] .. run_id, 'stalled', '1')
    redis.call('INCR', KEYS[3])
    result[#result + 1] = run_id
    result[#result + 1] = record
  end
end
result[1] = redis.call('HLEN', KEYS[2])
return result
