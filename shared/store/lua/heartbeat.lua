-- Extend a lease we still hold (and the run's place at the sub-agent gate, if it has one); 0 means it was
-- taken over and the holder must stop.
-- KEYS: 1 lease, 2 lanes due, 3 gate running   ARGV: 1 token, 2 new expiry ms, 3 session key
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'expiresAt', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], redis.call('HGET', KEYS[1], 'runId'))
return 1
