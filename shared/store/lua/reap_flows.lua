-- Flows whose deadline passed: a step that should have ended, or a run that ended with nobody advancing
-- the flow after it. Each is rescheduled by the grace (so it is reported once per grace) and returned.
-- A recovery pass looks at every flow up to its horizon (ARGV 4), not only the due ones.
-- What a pass found is kept a while under its own key (KEYS 2, named by the pass's id): the same call sent
-- again by the client's retry, its reply lost with the connection, finds them rescheduled and would answer
-- none, leaving them to the next pass; it answers with what the first one found.
-- KEYS: 1 flows due, 2 this pass's kept reply
-- ARGV: 1 now ms, 2 limit, 3 grace ms, 4 horizon (score or '+inf'), 5 how long the reply is kept (ms)
local kept = kept_reply(KEYS[2])
if kept then
  return kept
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[2]))
for _, flow_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[3]), flow_id)
end
return keep_reply(KEYS[2], due, ARGV[5])
