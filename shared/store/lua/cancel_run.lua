-- Cancel a run. One that is queued, or parked on a wait, ends ``aborted`` here and now: its lane moves
-- on, its completion is published, its session records it (abortedLastRun). One a worker is running is
-- only marked (cancelRequested, and why: cancelReason) and announced on the cancel channel: the worker holding its lease stops
-- it (hanging up on its model) and commits what it has, ``aborted``.
-- Returns {'missing'} | {'ended', status} | {'cancelling'} | {'aborted', next head id, kind, flowId,
-- then (waiter id, session, kind) triples}.
-- KEYS: 1 run, 2 lane, 3 lease, 4 session, 5 run events, 6 lanes due, 7 flows due, 8 runs waiting for this
--       one, 9 runs finished (metrics), 10 the session's state log
-- ARGV: 1 run id, 2 now ms, 3 retention s, 4 completion channel, 5 cancel channel, 6 dispatch grace ms,
--       7 run key prefix, 8 session key, 9 the error it ends with, 10 cancel id, 11 the state change the
--       run's end is ('' none: shared/domain/state_events.py), 12 the watch key prefixes (json, _lib.lua)
-- A parked run had taken in its session's notices when it was claimed: its end acknowledges them, as a
-- commit would.
-- A repeat of a cancel that ended the run (its reply lost with the connection) answers as the first did,
-- kept on the run under the cancel's id: its caller still hands on the lane's next run and the waiters.
local run = redis.call('HMGET', KEYS[1], 'status', 'kind', 'flowId', 'cancelledBy', 'cancelReply', 'noticed')
if run[4] == ARGV[10] then
  return cjson.decode(run[5])
end
local status = run[1]
if not status then
  return {'missing'}
end
if not is_active(status) then
  return {'ended', status}
end
local now = tonumber(ARGV[2])
local lease = redis.call('HMGET', KEYS[3], 'runId', 'owner')
local parked = lease[1] == ARGV[1] and lease[2] == 'suspended'
if status == 'running' and not parked then
  redis.call('HSET', KEYS[1], 'cancelRequested', '1', 'cancelReason', ARGV[9])
  redis.call('XADD', KEYS[5], '*', 'type', 'cancel_requested', 'at', now)
  redis.call('PUBLISH', ARGV[5], ARGV[1])
  return {'cancelling'}
end
redis.call('HSET', KEYS[1], 'status', 'aborted', 'endedAt', now, 'error', ARGV[9])
redis.call('HDEL', KEYS[1], 'memo')
redis.call('XADD', KEYS[5], '*', 'type', 'ended', 'status', 'aborted', 'at', now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[5], ARGV[3])
local was_head = redis.call('LINDEX', KEYS[2], 0) == ARGV[1]
redis.call('LREM', KEYS[2], 0, ARGV[1])
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('HSET', KEYS[4], 'abortedLastRun', 'true', 'updatedAt', now)
  local watch = cjson.decode(ARGV[12])
  record_state(KEYS[4], KEYS[10], ARGV[11], now, ARGV[8], watch)
  ack_notices(watch, ARGV[8], run[6], watch['ttl'])
end
publish_ended(KEYS[1], ARGV[4])
redis.call('HINCRBY', KEYS[9], (run[2] or 'chat') .. ':aborted', 1)
if run[3] then
  redis.call('ZADD', KEYS[7], now, run[3])
end
local result = {'aborted', '', '', ''}
if was_head then
  redis.call('DEL', KEYS[3])
  result = advance_lane('aborted', KEYS[2], KEYS[6], ARGV[7], ARGV[8], now, tonumber(ARGV[6]))
end
result = take_waiters(result, KEYS[8], ARGV[7])
redis.call('HSET', KEYS[1], 'cancelledBy', ARGV[10], 'cancelReply', cjson.encode(result))
return result
