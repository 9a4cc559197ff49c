-- Extend a lease we still hold (and the run's place at the sub-agent gate, if it has one); 0 means it was
-- taken over and the holder must stop. A run the stall watchdog stopped following (its lease had lapsed
-- or was parked) is followed again from now: a renewal is not progress, so an existing entry is kept.
-- KEYS: 1 lease, 2 lanes due, 3 gate running, 4 runs' progress
-- ARGV: 1 token, 2 new expiry ms, 3 session key, 4 now ms
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
local run_id = redis.call('HGET', KEYS[1], 'runId')
redis.call('HSET', KEYS[1], 'expiresAt', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], run_id)
redis.call('ZADD', KEYS[4], 'NX', ARGV[4], run_id)
return 1
