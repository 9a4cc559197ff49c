-- Append an event to a run's stream once: this call sent again after its reply was lost with the
-- connection finds its id as the run's last event and appends nothing (a follower would show a streamed
-- piece of text twice).
-- KEYS: 1 run events, 2 run   ARGV: 1 the event's id, 2.. field, value pairs
if redis.call('HGET', KEYS[2], 'lastEvent') == ARGV[1] then
  return 0
end
redis.call('XADD', KEYS[1], '*', unpack(ARGV, 2))
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'lastEvent', ARGV[1])
end
return 1
