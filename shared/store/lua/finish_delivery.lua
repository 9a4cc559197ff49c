-- Record an attempt's outcome. 'pending' (a retryable failure) releases the delivery for the next attempt;
-- a final state also finishes the flow. A delivery that is already final never changes.
-- KEYS: 1 delivery, 2 flow, 3 flows due, 4 deliveries (metrics), 5 flows ended (metrics)
-- ARGV: 1 status, 2 error ('' none), 3 now ms, 4 flow id
local current = redis.call('HGET', KEYS[1], 'status')
if current ~= 'pending' then
  return 0
end
redis.call('HDEL', KEYS[1], 'owner', 'leaseUntil')
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[3])
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'lastError', ARGV[2])
end
if ARGV[1] == 'pending' then
  return 1
end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
if ARGV[1] == 'delivered' then
  redis.call('HSET', KEYS[1], 'deliveredAt', ARGV[3])
end
if redis.call('HGET', KEYS[2], 'status') ~= 'done' then
  redis.call('HINCRBY', KEYS[5], 'completed', 1)
end
redis.call('HSET', KEYS[2], 'deliveryStatus', ARGV[1], 'status', 'done', 'updatedAt', ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
return 1
