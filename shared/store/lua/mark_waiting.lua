-- Say on a run what it waits for (model capacity), or that it no longer waits (ARGV 1 ''). A run that is
-- gone stays gone: its hash is not made again.
-- KEYS: 1 run
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == '' then
  redis.call('HDEL', KEYS[1], 'waitingFor')
else
  redis.call('HSET', KEYS[1], 'waitingFor', ARGV[1])
end
return 1
