-- End a run in one atomic step: transcript append, terminal state, session activity and usage, lane
-- advance, completion signal. Returns the next run of the lane (id, kind, flow), already marked
-- dispatched, and the runs suspended waiting for this one (id, session, kind), for the caller to enqueue;
-- last, the transcript's length in Redis (the caller's hot window reads it here, not in a trip of its own).
-- A run of a flow puts the flow on the reaper's schedule, in case whoever should advance it dies first.
-- KEYS: 1 run, 2 lease, 3 lane, 4 session, 5 transcript, 6 run events, 7 lanes due, 8 index all,
--       9 index agent, 10 index kind, 11 flows due, 12 runs waiting for this one, 13 runs finished
--       (metrics), 14 gate running, 15 gate queue (the first run waiting for its place comes back as a
--       waiter), 16 runs' progress, 17 runs stalled (the stall watchdog forgets the run), 18 the session's
--       state log
-- ARGV: 1 run id, 2 token, 3 now ms, 4 status, 5 run fields (json), 6 context tokens ('' unknown),
--       7 retention s, 8 completion channel, 9 dispatch grace ms, 10 run key prefix, 11 session key,
--       12 input tokens, 13 output tokens, 14 cost usd, 15 commit id, 16 the state change the run's end is
--       ('' none: shared/domain/state_events.py), 17 the watch key prefixes (json, _lib.lua), 18.. the
--       messages to append (json), in order
-- The notices the run took in when it was claimed (its ``noticed``) are acknowledged here, with no round
-- trip of their own: the turn that read them is in the transcript now.
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
-- The run as it was claimed: its hash, read once, is what the signal and the session's update are made of.
local run = hash_table(redis.call('HGETALL', KEYS[1]))
if not is_active(run['status']) then
  return {'fenced'}
end
local now = tonumber(ARGV[3])
for i = 18, #ARGV do
  redis.call('XADD', KEYS[5], '*', 'm', ARGV[i])
end
local ended_fields = cjson.decode(ARGV[5])
ended_fields['status'] = ARGV[4]
ended_fields['endedAt'] = ARGV[3]
for field, value in pairs(ended_fields) do
  run[field] = value
end
hdel_held(KEYS[1], run, {'memo'})
redis.call('XADD', KEYS[6], '*', 'type', 'ended', 'status', ARGV[4], 'at', now)
redis.call('EXPIRE', KEYS[1], ARGV[7])
redis.call('EXPIRE', KEYS[6], ARGV[7])
-- The lane's head and the one after it: the lane's next run once this one leaves it.
local heads = redis.call('LRANGE', KEYS[3], 0, 1)
local next_run = heads[1]
if heads[1] == ARGV[1] then
  redis.call('LPOP', KEYS[3])
  next_run = heads[2]
end
redis.call('DEL', KEYS[2])
left_watch(KEYS[16], KEYS[17], ARGV[1], KEYS[1], run['stalled'] or false)
local session = hash_table(redis.call('HGETALL', KEYS[4]))
if next(session) ~= nil then
  local kind = run['kind']
  local changed = {updatedAt = now, endedAt = now}
  -- abortedLastRun holds until a later run ends ok. A sub-agent's own task and announce leave it
  -- unwritten (the release shows it on a sub-agent only once something else ran there, a send).
  if ARGV[4] == 'aborted' then
    changed['abortedLastRun'] = 'true'
  elseif ARGV[4] == 'ok' and kind ~= 'subagent' and kind ~= 'subagent_announce' then
    changed['abortedLastRun'] = 'false'
  end
  if not session['spawnedBy'] then
    local shown = {ok = 'done', error = 'failed', timeout = 'timeout', aborted = 'killed'}
    changed['status'] = shown[ARGV[4]] or ARGV[4]
  end
  local input_tokens = tonumber(session['inputTokens'] or '0') + tonumber(ARGV[12])
  local output_tokens = tonumber(session['outputTokens'] or '0') + tonumber(ARGV[13])
  changed['inputTokens'] = input_tokens
  changed['outputTokens'] = output_tokens
  changed['totalTokens'] = input_tokens + output_tokens
  -- Known context tokens mean a model step ran, with the agent's system text.
  if ARGV[6] ~= '' then
    changed['contextTokens'] = ARGV[6]
    changed['systemSent'] = 'true'
  end
  hset_fields(KEYS[4], changed)
  -- Redis's own float arithmetic keeps the sum as it always has; adding nothing to a sum changes nothing.
  if not session['estimatedCostUsd'] or tonumber(ARGV[14]) ~= 0 then
    redis.call('HINCRBYFLOAT', KEYS[4], 'estimatedCostUsd', ARGV[14])
  end
  for i = 8, 10 do
    redis.call('ZADD', KEYS[i], now, ARGV[11])
  end
  local watch = cjson.decode(ARGV[17])
  record_state(KEYS[4], KEYS[18], ARGV[16], now, ARGV[11], watch)
  ack_notices(watch, ARGV[11], run['noticed'], watch['ttl'])
end
local ended = signal_ended(run, ARGV[8])
redis.call('HINCRBY', KEYS[13], (ended['kind'] or 'chat') .. ':' .. ARGV[4], 1)
if ended['flowId'] then
  redis.call('ZADD', KEYS[11], now + tonumber(ARGV[9]), ended['flowId'])
end
local result = dispatch_next('committed', next_run, KEYS[7], ARGV[10], ARGV[11], now, tonumber(ARGV[9]))
-- Only a sub-agent's runs take a place at the gate (claim.lua).
if run['kind'] == 'subagent' or run['kind'] == 'report' then
  result = leave_gate(result, KEYS[14], KEYS[15], ARGV[10], ARGV[1])
end
if run['awaited'] then
  result = take_waiters(result, KEYS[12], ARGV[10])
end
table.insert(result, redis.call('XLEN', KEYS[5]))
-- The run's end and the commit's record (its id and reply, for a repeat of this call) in one write.
ended_fields['committedBy'] = ARGV[15]
ended_fields['commitReply'] = cjson.encode(result)
hset_fields(KEYS[1], ended_fields)
return result
