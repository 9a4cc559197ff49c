-- Remember the model's reply before committing it, so a retried attempt commits it instead of asking the
-- model again. Fenced: only the lease holder may write. A step memoized is the run's progress (the stall
-- watchdog's clock restarts).
-- KEYS: 1 run, 2 lease, 3 runs' progress, 4 runs stalled
-- ARGV: 1 token, 2 memo (json), 3 now ms, 4 run id
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'memo', ARGV[2])
made_progress(KEYS[3], KEYS[4], ARGV[3], ARGV[4], KEYS[1])
return 1
