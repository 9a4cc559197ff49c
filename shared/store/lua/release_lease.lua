-- Release a lease its owner holds: a lease that lapsed and was taken by another stays theirs.
-- KEYS: 1 the lease. ARGV: 1 the owner.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
