-- Park a run that waits for model capacity: its loop state is stored and its lease parked until it is
-- due; its task is sent again for then, and the reaper resumes it if that message is lost. Anyone may
-- resume it (claim.lua), and its resumption is not a new attempt.
-- A run cancelled while it ran is not parked ('cancelled'): it ends aborted now.
-- KEYS: 1 run, 2 lease, 3 lanes due
-- ARGV: 1 token, 2 loop state (json), 3 due ms, 4 session key, 5 park id (a repeat answers as the first)
if redis.call('HGET', KEYS[1], 'suspendedBy') == ARGV[5] then
  return 'parked'
end
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[1] then
  return 'fenced'
end
redis.call('HSET', KEYS[1], 'memo', ARGV[2])
if redis.call('HGET', KEYS[1], 'cancelRequested') == '1' then
  return 'cancelled'
end
redis.call('HSET', KEYS[2], 'owner', 'suspended', 'expiresAt', ARGV[3])
redis.call('HSET', KEYS[1], 'suspendedBy', ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 'parked'
