-- The reaper's look at the sub-agent gate: places whose lease lapsed (a dead worker's runs) are freed, and
-- the first runs waiting, as many as there are free places, come back to be dispatched again.
-- Returns (run id, session key, kind) triples.
-- KEYS: 1 gate running, 2 gate queue   ARGV: 1 now ms, 2 gate places, 3 run key prefix
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local result = {}
if free <= 0 then
  return result
end
first_waiting(KEYS[2], ARGV[3])
for _, waiting in ipairs(redis.call('ZRANGE', KEYS[2], 0, free - 1)) do
  local fields = redis.call('HMGET', ARGV[3] .. waiting, 'sessionKey', 'kind')
  if fields[1] then
    result[#result + 1] = waiting
    result[#result + 1] = fields[1]
    result[#result + 1] = fields[2]
  end
end
return result
