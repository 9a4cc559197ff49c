-- End a run in one atomic step: transcript append, terminal state, session activity and usage, lane
-- advance, completion signal. Returns the next run of the lane (id, kind, flow), already marked
-- dispatched, and the runs suspended waiting for this one (id, session, kind), for the caller to enqueue.
-- A run of a flow puts the flow on the reaper's schedule, in case whoever should advance it dies first.
-- KEYS: 1 run, 2 lease, 3 lane, 4 session, 5 transcript, 6 run events, 7 lanes due, 8 index all,
--       9 index agent, 10 index kind, 11 flows due, 12 runs waiting for this one, 13 runs finished
--       (metrics), 14 gate running, 15 gate queue (the first run waiting for its place comes back as a
--       waiter)
-- ARGV: 1 run id, 2 token, 3 now ms, 4 status, 5 run fields (json), 6 context tokens ('' unknown),
--       7 retention s, 8 completion channel, 9 dispatch grace ms, 10 run key prefix, 11 session key,
--       12 input tokens, 13 output tokens, 14 cost usd, 15 commit id, 16.. the messages to append (json),
--       in order
-- A commit sent again by the client's retry, its reply lost with the connection, answers as the first one
-- did (kept on the run under the commit's id): its caller still hands on the lane's next run and the
-- waiters.
if redis.call('HGET', KEYS[2], 'token') ~= ARGV[2] then
  local kept = redis.call('HMGET', KEYS[1], 'committedBy', 'commitReply')
  if kept[1] == ARGV[15] then
    return cjson.decode(kept[2])
  end
  return {'fenced'}
end
if not is_active(redis.call('HGET', KEYS[1], 'status')) then
  return {'fenced'}
end
local now = tonumber(ARGV[3])
for i = 16, #ARGV do
  redis.call('XADD', KEYS[5], '*', 'm', ARGV[i])
end
hset_object(KEYS[1], ARGV[5])
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'endedAt', now)
redis.call('HDEL', KEYS[1], 'memo', 'dispatchedAt')
redis.call('XADD', KEYS[6], '*', 'type', 'ended', 'status', ARGV[4], 'at', now)
redis.call('EXPIRE', KEYS[1], ARGV[7])
redis.call('EXPIRE', KEYS[6], ARGV[7])
if redis.call('LINDEX', KEYS[3], 0) == ARGV[1] then
  redis.call('LPOP', KEYS[3])
end
redis.call('DEL', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('HSET', KEYS[4], 'updatedAt', now, 'endedAt', now)
  -- abortedLastRun holds until a later run ends ok. A sub-agent's own task and announce leave it
  -- unwritten (the release shows it on a sub-agent only once something else ran there, a send).
  local kind = redis.call('HGET', KEYS[1], 'kind')
  if ARGV[4] == 'aborted' then
    redis.call('HSET', KEYS[4], 'abortedLastRun', 'true')
  elseif ARGV[4] == 'ok' and kind ~= 'subagent' and kind ~= 'subagent_announce' then
    redis.call('HSET', KEYS[4], 'abortedLastRun', 'false')
  end
  if redis.call('HEXISTS', KEYS[4], 'spawnedBy') == 0 then
    local shown = {ok = 'done', error = 'failed', timeout = 'timeout', aborted = 'killed'}
    redis.call('HSET', KEYS[4], 'status', shown[ARGV[4]] or ARGV[4])
  end
  local input_tokens = redis.call('HINCRBY', KEYS[4], 'inputTokens', ARGV[12])
  local output_tokens = redis.call('HINCRBY', KEYS[4], 'outputTokens', ARGV[13])
  redis.call('HSET', KEYS[4], 'totalTokens', input_tokens + output_tokens)
  redis.call('HINCRBYFLOAT', KEYS[4], 'estimatedCostUsd', ARGV[14])
  -- Known context tokens mean a model step ran, with the agent's system text.
  if ARGV[6] ~= '' then
    redis.call('HSET', KEYS[4], 'contextTokens', ARGV[6], 'systemSent', 'true')
  end
  for i = 8, 10 do
    redis.call('ZADD', KEYS[i], now, ARGV[11])
  end
end
local ended = publish_ended(KEYS[1], ARGV[8])
redis.call('HINCRBY', KEYS[13], (ended['kind'] or 'chat') .. ':' .. ARGV[4], 1)
if ended['flowId'] then
  redis.call('ZADD', KEYS[11], now + tonumber(ARGV[9]), ended['flowId'])
end
local result = advance_lane('committed', KEYS[3], KEYS[7], ARGV[10], ARGV[11], now, tonumber(ARGV[9]))
result = leave_gate(result, KEYS[14], KEYS[15], ARGV[10], ARGV[1])
result = take_waiters(result, KEYS[12], ARGV[10])
redis.call('HSET', KEYS[1], 'committedBy', ARGV[15], 'commitReply', cjson.encode(result))
return result
