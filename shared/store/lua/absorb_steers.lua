-- A running run takes in the steer messages queued behind it in its lane (before its next model step):
-- each queued ``steer`` run leaves the lane and ends ``ok`` here, its reply saying which run took it in,
-- and its id joins the list of what this run absorbed. That list is the answer, in order, so a retried
-- attempt (resuming from an older memo) finds again every message its run took in, and none twice.
-- KEYS: 1 lane, 2 this run's absorbed list, 3 runs finished (metrics)
-- ARGV: 1 this run's id, 2 run key prefix, 3 now ms, 4 retention s, 5 completion channel prefix,
--       6 run events key prefix
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then
  return redis.call('LRANGE', KEYS[2], 0, -1)
end
for _, queued in ipairs(redis.call('LRANGE', KEYS[1], 1, -1)) do
  local key = ARGV[2] .. queued
  local fields = redis.call('HMGET', key, 'kind', 'status')
  if fields[1] == 'steer' and fields[2] == 'queued' then
    redis.call('LREM', KEYS[1], 1, queued)
    redis.call('HSET', key, 'status', 'ok', 'endedAt', ARGV[3], 'steeredInto', ARGV[1],
      'reply', 'taken in by run ' .. ARGV[1] .. ' at its next step')
    redis.call('EXPIRE', key, ARGV[4])
    redis.call('XADD', ARGV[6] .. queued, '*', 'type', 'ended', 'status', 'ok', 'at', ARGV[3])
    redis.call('EXPIRE', ARGV[6] .. queued, ARGV[4])
    publish_ended(key, ARGV[5] .. queued)
    redis.call('HINCRBY', KEYS[3], 'steer:ok', 1)
    redis.call('RPUSH', KEYS[2], queued)
  end
end
redis.call('EXPIRE', KEYS[2], ARGV[4])
return redis.call('LRANGE', KEYS[2], 0, -1)
