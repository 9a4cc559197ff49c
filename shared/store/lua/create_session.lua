-- Create a session entry with its lookups and indexes if it does not exist (1), else leave it (0).
-- A repeat of this call after its reply was lost finds the entry it made (the same sessionId, new for
-- every entry) and answers as the first call did.
-- KEYS: 1 session, 2 index all, 3 index agent, 4 index kind, 5 sessionId lookup
-- ARGV: 1 session key, 2 fields (json), 3 updatedAt ms, 4 the new entry's sessionId
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'sessionId') == ARGV[4] then
    return 1
  end
  return 0
end
hset_object(KEYS[1], ARGV[2])
redis.call('SET', KEYS[5], ARGV[1])
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], ARGV[3], ARGV[1])
end
return 1
