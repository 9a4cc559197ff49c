-- Archive an ended session: it leaves the listings (indexes) but its entry and id lookup stay; its label
-- is free again for the agent's next session (a child labelled "research" after this one).
-- KEYS: 1 session, 2 index all, 3 index agent, 4 index kind, 5 archive due, 6 the agent's labels,
--       7 the archived sessions' index
-- ARGV: 1 session key, 2 now ms
redis.call('ZREM', KEYS[5], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 2, 4 do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
local label = redis.call('HGET', KEYS[1], 'label')
if label and redis.call('HGET', KEYS[6], label) == ARGV[1] then
  redis.call('HDEL', KEYS[6], label)
end
redis.call('HSET', KEYS[1], 'archivedAt', ARGV[2])
redis.call('ZADD', KEYS[7], ARGV[2], ARGV[1])
return 1
