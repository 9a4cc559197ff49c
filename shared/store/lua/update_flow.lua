-- Set a flow's fields, and when the reaper looks at it again, only while the flow exists: a step that read
-- the flow before a failover must not leave a partial flow on a master that never had it.
-- 1 if set, 0 if the flow is gone.
-- KEYS: 1 flow, 2 flows due
-- ARGV: 1 flow id, 2 fields (json), 3 now ms, 4 the reaper's next look (ms; '' leaves it)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
hset_object(KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[3])
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
return 1
