-- Extend a lease its owner still holds: one that lapsed and was taken by another stays theirs (0).
-- KEYS: 1 the lease. ARGV: 1 the owner, 2 its new time to live (ms).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
