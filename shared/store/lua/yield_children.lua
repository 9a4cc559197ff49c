-- sessions_yield: the session waits for every child still to report. Returns {'none'} when none is
-- pending, else {'waiting', the yield's number, children pending}; the same yield asked again (a retried
-- attempt) gets the same answer.
-- The yield's answer is kept on the session under the yielding run (yieldedBy, yieldReply), which the
-- wait's end (end_wait.lua) leaves: the same call sent again by the client's retry, its reply lost with the
-- connection, answers as the first did even when a child reported and ended the wait in between (it would
-- answer 'none', telling the agent there was nothing to wait for).
-- KEYS: 1 session hash, 2 the session's yield reports list
-- ARGV: 1 the yielding run's id
local kept = redis.call('HMGET', KEYS[1], 'yieldedBy', 'yieldReply')
if kept[1] == ARGV[1] then
  return cjson.decode(kept[2])
end
local pending = tonumber(redis.call('HGET', KEYS[1], 'pendingChildren') or '0')
local waiting = redis.call('HGET', KEYS[1], 'waiting')
if waiting then
  return {'waiting', waiting, tostring(pending)}
end
if pending <= 0 then
  return {'none'}
end
local number = redis.call('HINCRBY', KEYS[1], 'yields', 1)
local reply = {'waiting', tostring(number), tostring(pending)}
redis.call('HSET', KEYS[1], 'waiting', number, 'yieldRun', ARGV[1], 'yieldedBy', ARGV[1],
  'yieldReply', cjson.encode(reply))
redis.call('DEL', KEYS[2])
return reply
