-- Set a flow's fields, and when the reaper looks at it again, only while the flow exists: a step that read
-- the flow before a failover must not leave a partial flow on a master that never had it.
-- 1 if set, 0 if the flow is gone.
-- The ids of the flow's last updates are kept on it (updateIds): the same call sent again by the client's
-- retry, its reply lost with the connection, answers 1 and writes nothing, so an update that landed
-- between the call and its repeat stays (a report run's lastRunId never goes back to an older run).
-- KEYS: 1 flow, 2 flows due
-- ARGV: 1 flow id, 2 fields (json), 3 now ms, 4 the reaper's next look (ms; '' leaves it), 5 update id,
--       6 how many update ids are kept
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local kept = cjson.decode(redis.call('HGET', KEYS[1], 'updateIds') or '[]')
for _, id in ipairs(kept) do
  if id == ARGV[5] then
    return 1
  end
end
table.insert(kept, ARGV[5])
while #kept > tonumber(ARGV[6]) do
  table.remove(kept, 1)
end
hset_object(KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[3], 'updateIds', cjson.encode(kept))
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
end
return 1
