-- Park a run until its wait is over: its loop state is stored and its lease parked until the deadline
-- (the reaper resumes it then). A run that waits for another run (KEYS 4 and 5 given) is registered to be
-- woken by that run's commit, and is not parked if that run has already ended: the caller goes on
-- ('ready'). A run that waits for model capacity (three keys) is dispatched again for its deadline by the
-- caller. A run cancelled while it ran is not parked ('cancelled'): it ends aborted now.
-- KEYS: 1 run, 2 lease, 3 lanes due, 4 runs waiting for the awaited run, 5 the awaited run (4-5: optional)
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
local awaits = #KEYS == 5
if awaits and not is_active(redis.call('HGET', KEYS[5], 'status')) then
  return 'ready'
end
redis.call('HSET', KEYS[2], 'owner', 'suspended', 'expiresAt', ARGV[3])
redis.call('HSET', KEYS[1], 'suspendedBy', ARGV[6])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
if awaits then
  redis.call('SADD', KEYS[4], ARGV[5])
  -- Said on the awaited run's hash too, which its commit reads anyway: a run nobody waits for (nearly
  -- every run) is committed without a look at its waiters.
  redis.call('HSET', KEYS[5], 'awaited', '1')
end
return 'suspended'
