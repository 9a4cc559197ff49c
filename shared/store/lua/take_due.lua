-- Members of a due-time ZSET whose time has come, taken (removed) so only one sweeper gets each.
-- What a call took is kept a while under its own key (KEYS 2, named by the call's id): the same call sent
-- again by the client's retry, its reply lost with the connection, finds them gone from the ZSET and would
-- answer none, leaving them never swept; it answers with what the first one took.
-- KEYS: 1 zset, 2 this call's kept reply   ARGV: 1 now ms, 2 limit, 3 how long the reply is kept (ms)
local kept = kept_reply(KEYS[2])
if kept then
  return kept
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
end
return keep_reply(KEYS[2], due, ARGV[3])
