-- A child's report reaches the session that spawned it. Applied once per child (by its flow id): the
-- child is no longer pending, the report is unread, and if the session waits (a yield) the report joins
-- the input of the run that will wake it. What was decided is kept, so a repeat decides the same.
-- Returns {decision ('followup', or the yield's number), children pending, the yield waiting now ('' for
-- none), when the session was killed ('' if it was not)}, or {'gone'}.
-- KEYS: 1 session hash, 2 reported hash, 3 yield reports list
-- ARGV: 1 the child's flow id, 2 the report's text
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'gone'}
end
local waiting = redis.call('HGET', KEYS[1], 'waiting') or ''
local decision = redis.call('HGET', KEYS[2], ARGV[1])
if not decision then
  decision = waiting ~= '' and waiting or 'followup'
  redis.call('HSET', KEYS[2], ARGV[1], decision)
  if redis.call('HINCRBY', KEYS[1], 'pendingChildren', -1) < 0 then
    redis.call('HSET', KEYS[1], 'pendingChildren', 0)
  end
  redis.call('HINCRBY', KEYS[1], 'unreadReports', 1)
  if waiting ~= '' then
    redis.call('RPUSH', KEYS[3], ARGV[2])
  end
end
local pending = redis.call('HGET', KEYS[1], 'pendingChildren') or '0'
return {decision, pending, waiting, redis.call('HGET', KEYS[1], 'killedAt') or ''}
