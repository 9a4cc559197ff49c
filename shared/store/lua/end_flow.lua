-- End a flow once: set its last fields, take it off the reaper's schedule, count the end by reason (and,
-- for a flow that ends with nothing to deliver, its delivery state). 0 if it had already ended (it is
-- still taken off the schedule, where a late look may have put it back).
-- KEYS: 1 flow, 2 flows due, 3 flows ended (metrics), 4 deliveries (metrics)
-- ARGV: 1 flow id, 2 reason, 3 fields to set (json), 4 now ms
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then
  return 0
end
hset_object(KEYS[1], ARGV[3])
redis.call('HSET', KEYS[1], 'status', 'done', 'updatedAt', ARGV[4])
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
local delivery = redis.call('HGET', KEYS[1], 'deliveryStatus')
if delivery == 'skipped' or delivery == 'blocked' then
  redis.call('HINCRBY', KEYS[4], delivery, 1)
end
return 1
