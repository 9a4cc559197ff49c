-- Create a hash only if it does not exist yet: 1 if created, 0 if it was there (a repeated step).
-- KEYS: 1 hash   ARGV: 1 fields (json)
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
hset_object(KEYS[1], ARGV[1])
return 1
