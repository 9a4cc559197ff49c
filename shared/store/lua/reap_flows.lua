-- Flows whose deadline passed: a step that should have ended, or a run that ended with nobody advancing
-- the flow after it. Each is rescheduled by the grace (so it is reported once per grace) and returned.
-- A recovery pass looks at every flow up to its horizon (ARGV 4), not only the due ones.
-- KEYS: 1 flows due   ARGV: 1 now ms, 2 limit, 3 grace ms, 4 horizon (score or '+inf')
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[2]))
for _, flow_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[3]), flow_id)
end
return due
