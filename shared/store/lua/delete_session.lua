-- Remove a session and everything that belongs to it: entry, transcript, lane, lease, lookups, indexes.
-- KEYS: 1 session, 2 transcript, 3 lane, 4 lease, 5 index all, 6 index agent, 7 index kind, 8 sessionId lookup,
--       9 the agent's label index, 10 archive due, 11 its parent's children set, 12 its runs stream,
--       13 its cold transcript's record, 14 the archived sessions' index, 15 the reports of its children it
--       recorded (no time to live: nothing reads them once the session is gone), 16 its state log (its
--       stateVersion goes with its hash, as the release forgets a deleted session's head), 17 its watchers'
--       cursors, 18 its pending notices (its cursors on other sessions go when a change there finds it gone)
-- ARGV: 1 session key
local label = redis.call('HGET', KEYS[1], 'label')
if label and redis.call('HGET', KEYS[9], label) == ARGV[1] then
  redis.call('HDEL', KEYS[9], label)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[8], KEYS[12], KEYS[13], KEYS[15], KEYS[16], KEYS[17], KEYS[18])
for i = 5, 7 do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
redis.call('ZREM', KEYS[10], ARGV[1])
redis.call('ZREM', KEYS[14], ARGV[1])
redis.call('SREM', KEYS[11], ARGV[1])
return 1
