-- End a flow once: set its last fields, take it off the reaper's schedule, count the end by reason (and,
-- for a flow that ends with nothing to deliver, its delivery state). 0 if it had already ended (it is
-- still taken off the schedule, where a late look may have put it back).
-- The end that ended it is kept on the flow (endedBy, ARGV 5's id): the same call sent again by the
-- client's retry, its reply lost with the connection, answers 1 as the first did, so its caller still does
-- what follows an end of its own (a cancel stops the flow's runs).
-- KEYS: 1 flow, 2 flows due, 3 flows ended (metrics), 4 deliveries (metrics)
-- ARGV: 1 flow id, 2 reason, 3 fields to set (json), 4 now ms, 5 end id
redis.call('ZREM', KEYS[2], ARGV[1])
local flow = redis.call('HMGET', KEYS[1], 'status', 'endedBy')
if flow[1] ~= 'running' then
  return flow[2] == ARGV[5] and 1 or 0
end
hset_object(KEYS[1], ARGV[3])
redis.call('HSET', KEYS[1], 'status', 'done', 'updatedAt', ARGV[4], 'endedBy', ARGV[5])
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
local delivery = redis.call('HGET', KEYS[1], 'deliveryStatus')
if delivery == 'skipped' or delivery == 'blocked' then
  redis.call('HINCRBY', KEYS[4], delivery, 1)
end
return 1
