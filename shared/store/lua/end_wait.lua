-- The run that wakes a yielded session was accepted: the wait (its number) is over.
-- KEYS: 1 session hash, 2 the session's yield reports list
-- ARGV: 1 the yield's number
if redis.call('HGET', KEYS[1], 'waiting') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'waiting', 'yieldRun')
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
