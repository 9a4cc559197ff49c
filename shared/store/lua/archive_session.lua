-- Archive an ended session: it leaves the listings (indexes) but its entry and id lookup stay.
-- KEYS: 1 session, 2 index all, 3 index agent, 4 index kind, 5 archive due   ARGV: 1 session key, 2 now ms
redis.call('ZREM', KEYS[5], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 2, 4 do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
redis.call('HSET', KEYS[1], 'archivedAt', ARGV[2])
return 1
