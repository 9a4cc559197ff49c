-- A session spawned a child: remember it, and count it among the children still to report (a spawner with
-- no session yet, an operator's call, counts nothing; nor does a child that owes no report, ARGV 2 '0':
-- a fire-and-forget spawn). Done once per child, whatever the retries.
-- KEYS: 1 the parent's children set, 2 the parent's session hash
-- ARGV: 1 child session key, 2 '1' when its report is awaited ('0': not)
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 and ARGV[2] ~= '0' and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'pendingChildren', 1)
end
return tonumber(redis.call('HGET', KEYS[2], 'pendingChildren') or '0')
