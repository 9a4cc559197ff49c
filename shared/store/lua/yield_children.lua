-- sessions_yield: the session waits for every child still to report. Returns {'none'} when none is
-- pending, else {'waiting', the yield's number, children pending}; the same yield asked again (a retried
-- attempt) gets the same answer.
-- KEYS: 1 session hash, 2 the session's yield reports list
-- ARGV: 1 the yielding run's id
local pending = tonumber(redis.call('HGET', KEYS[1], 'pendingChildren') or '0')
local waiting = redis.call('HGET', KEYS[1], 'waiting')
if waiting then
  return {'waiting', waiting, tostring(pending)}
end
if pending <= 0 then
  return {'none'}
end
local number = redis.call('HINCRBY', KEYS[1], 'yields', 1)
redis.call('HSET', KEYS[1], 'waiting', number, 'yieldRun', ARGV[1])
redis.call('DEL', KEYS[2])
return {'waiting', tostring(number), tostring(pending)}
