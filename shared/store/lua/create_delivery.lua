-- Create an announce's delivery once, and mark its flow's delivery pending in the same step: written
-- apart, a "pending" could land after a quick attempt had already recorded the final state.
-- 1 if created, 0 if it was there (a repeated step: the flow is left as the first one set it) or the
-- flow is over.
-- KEYS: 1 delivery, 2 flow, 3 flows due
-- ARGV: 1 delivery fields (json), 2 now ms, 3 the flow's next look (ms), 4 flow id
-- A flow that ended meanwhile (given up by the reaper) takes no delivery: it would stay pending forever;
-- nor does one that is gone (lost in a failover after its step read it).
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('HGET', KEYS[2], 'status') ~= 'running' then
  return 0
end
hset_object(KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'deliveryStatus', 'pending', 'updatedAt', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
return 1
