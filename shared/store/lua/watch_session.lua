-- A session starts watching another (sessions_send ``watch: true``; docs/contract.md §10, "Watches and
-- notices"), at the target's version now: it hears of the changes after it (the release's
-- ``registerSessionStateWatch``). A watch already there keeps its marks, so a pending notice stays pending.
-- KEYS: 1 the target's session, 2 the target's watchers
-- ARGV: 1 the watcher's key, 2 the watch's time to live (s)
-- Returns 1 (watching), 0 (the target is gone).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  local version = redis.call('HGET', KEYS[1], 'stateVersion') or '0'
  redis.call('HSET', KEYS[2], ARGV[1], version .. ',' .. version .. ',' .. version)
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
