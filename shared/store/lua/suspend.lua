-- Park a run that waits for another run: its loop state is stored, its lease is parked until the wait's
-- deadline (the reaper resumes it then), and it is registered to be woken by the awaited run's commit.
-- If the awaited run has already ended, nothing is parked: the caller goes on ('ready'). A run cancelled
-- while it ran is not parked either ('cancelled'): it ends aborted now, not when the wait is over.
-- KEYS: 1 run, 2 lease, 3 lanes due, 4 runs waiting for the awaited run, 5 the awaited run
-- A repeat of this call (its reply lost with the connection) answers 'suspended' as the first did, even
-- after the awaited run ended and woke the run meanwhile: 'ready' would run it twice at once.
-- ARGV: 1 token, 2 loop state (json), 3 deadline ms, 4 session key, 5 run id, 6 suspend id
if redis.call('HGET', KEYS[1], 'suspendedBy') == ARGV[6] then
  return 'suspended'
end
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[1] then
  return 'fenced'
end
redis.call('HSET', KEYS[1], 'memo', ARGV[2])
if redis.call('HGET', KEYS[1], 'cancelRequested') == '1' then
  return 'cancelled'
end
if not is_active(redis.call('HGET', KEYS[5], 'status')) then
  return 'ready'
end
redis.call('HSET', KEYS[2], 'owner', 'suspended', 'expiresAt', ARGV[3])
redis.call('HSET', KEYS[1], 'suspendedBy', ARGV[6])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[5])
return 'suspended'
