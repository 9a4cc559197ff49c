-- Find lanes that stopped moving: a head that was dispatched but never claimed within the grace, or whose
-- lease lapsed (its worker died). Marks them dispatched again and returns (runId, sessionKey, kind) triples
-- (and flowId) for the caller to enqueue. Lanes with a live lease are rescheduled to their lease expiry.
-- A recovery pass (after Redis restarted or failed over: a head's message may be lost) looks at every lane
-- up to its horizon (ARGV 7), not only the due ones.
-- What a pass found is kept a while under its own key (KEYS 3, named by the pass's id): the same call sent
-- again by the client's retry, its reply lost with the connection, finds the heads marked dispatched and
-- would answer none, leaving them to the grace; it answers with what the first one found.
-- KEYS: 1 lanes due, 2 reaper ran, 3 this pass's kept reply
-- ARGV: 1 now ms, 2 limit, 3 dispatch grace ms, 4 lane prefix, 5 lease prefix, 6 run prefix,
--       7 horizon (score or '+inf'), 8 how long the reply is kept (ms)
local kept = kept_reply(KEYS[3])
if kept then
  return kept
end
local now = tonumber(ARGV[1])
redis.call('SET', KEYS[2], now)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[7], 'LIMIT', 0, tonumber(ARGV[2]))
local stalled = {}
for _, session_key in ipairs(due) do
  local head = redis.call('LINDEX', ARGV[4] .. session_key, 0)
  if not head then
    redis.call('ZREM', KEYS[1], session_key)
  else
    local expires = tonumber(redis.call('HGET', ARGV[5] .. session_key, 'expiresAt') or '0')
    if expires > now then
      redis.call('ZADD', KEYS[1], expires, session_key)
    else
      redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), session_key)
      stalled[#stalled + 1] = head
      stalled[#stalled + 1] = session_key
      local fields = redis.call('HMGET', ARGV[6] .. head, 'kind', 'flowId')
      stalled[#stalled + 1] = fields[1] or 'chat'
      stalled[#stalled + 1] = fields[2] or ''
    end
  end
end
return keep_reply(KEYS[3], stalled, ARGV[8])
