-- Members of a due-time ZSET whose time has come, taken (removed) so only one sweeper gets each.
-- KEYS: 1 zset   ARGV: 1 now ms, 2 limit
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
end
return due
