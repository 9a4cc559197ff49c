-- Remember the model's reply before committing it, so a retried attempt commits it instead of asking the
-- model again. Fenced: only the lease holder may write.
-- KEYS: 1 run, 2 lease   ARGV: 1 token, 2 memo (json)
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'memo', ARGV[2])
return 1
