-- Append an event to a run's stream once: this call sent again after its reply was lost with the
-- connection finds its id as the run's last event and appends nothing (a follower would show a streamed
-- piece of text twice). An event is the run's progress: the stall watchdog's clock restarts, and a run
-- it reported stalled is not any more.
-- KEYS: 1 run events, 2 run, 3 runs' progress, 4 runs stalled
-- ARGV: 1 the event's id, 2 now ms, 3 run id, 4.. field, value pairs
-- One read of the run: whether this event is in already, whether the run is still there (its status),
-- whether the watchdog recorded it stalled.
local run = redis.call('HMGET', KEYS[2], 'lastEvent', 'status', 'stalled')
if run[1] == ARGV[1] then
  return 0
end
redis.call('XADD', KEYS[1], '*', unpack(ARGV, 4))
if run[2] then
  redis.call('HSET', KEYS[2], 'lastEvent', ARGV[1])
  made_progress(KEYS[3], KEYS[4], ARGV[2], ARGV[3], KEYS[2], run[3] or false)
end
return 1
