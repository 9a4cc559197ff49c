-- Accept a run: create or touch its session, record the run, queue it in the session's lane.
-- The run may execute at once only if it is the lane's head: then its task message, when the caller
-- rendered one, is pushed to the broker here (and its task-sent event published), else the caller
-- dispatches it.
-- A sessions_send's flow record is created in the same step as its primary run.
-- KEYS: 1 session, 2 index all, 3 index agent, 4 index kind, 5 sessionId lookup, 6 lane, 7 run,
--       8 run events, 9 lanes due, 10 flow, 11 flows due, 12 runs created (metrics), 13 the session's runs,
--       14 the broker queue of the task message, 15 this run's fold (the collect run's id, for a while:
--       a repeat of this call, its reply lost with the connection, answers 'folded' again, not folding twice),
--       16 the session's state log, 17 the chain's sends in its window
-- ARGV: 1 now ms, 2 run id, 3 session key, 4 session fields on create (json), 5 session fields to set (json),
--       6 run fields (json), 7 dispatch grace ms, 8 flow fields (json, '' for none), 9 the reaper's first look at the flow (ms),
--       10 run kind, 11 the task message ('' none), 12 its event's channel ('' none), 13 the event,
--       14 what a busy session does with it (messages.queue): '' queue it, 'reject' refuse it, 'collect'
--       fold it into the collect run still open at the lane's end, 15 its text (to fold), 16 run key prefix,
--       17 how long a fold is remembered (ms), 18 the state change the run's acceptance is ('' none:
--       shared/domain/state_events.py), recorded with it, 19 the watch key prefixes (json: its watchers
--       are told of it in the same step, _lib.lua), 20 with 'steer' in 14: the kinds of running run that
--       take steers, comma-separated, 21 the most sends and spawns the run's chain may make in its window
--       (0: not counted: the run is no send or spawn), 22 the window (ms)
-- Returns {seq, position in the lane, 1 if the task message was pushed}; {'busy', the head's id} when a
-- busy session refuses it; {'folded', the collect run's id} when it joined one; {'idle', the head's id
-- or ''} when a steer finds no running run that takes steers; {'chain_full'} when the run's chain made its
-- window's sends and spawns already (nothing is written).
local now = tonumber(ARGV[1])
-- Only a collect call folds (below), so only its repeat can find its fold.
if ARGV[14] == 'collect' then
  local folded = redis.call('GET', KEYS[15])
  if folded then
    return {'folded', folded}
  end
end
-- A retried call (the reply to the first one was lost) must not queue the run twice.
if redis.call('EXISTS', KEYS[7]) == 1 then
  local head = redis.call('LINDEX', KEYS[6], 0) == ARGV[2] and redis.call('HGET', KEYS[7], 'status') == 'queued'
  return {tonumber(redis.call('HGET', KEYS[7], 'seq')), head and 1 or 0, 0}
end
if ARGV[14] == 'reject' then
  local head = redis.call('LINDEX', KEYS[6], 0)
  if head then
    return {'busy', head}
  end
elseif ARGV[14] == 'steer' then
  -- A steer is for the run running now (a parked one too: it takes it in when it resumes); a run still
  -- queued, or one of a kind that takes no steers, is no place for it.
  local head = redis.call('LINDEX', KEYS[6], 0)
  if not head then
    return {'idle', ''}
  end
  local fields = redis.call('HMGET', ARGV[16] .. head, 'status', 'kind')
  local kinds = ',' .. ARGV[20] .. ','
  if fields[1] ~= 'running' or not string.find(kinds, ',' .. (fields[2] or '') .. ',', 1, true) then
    return {'idle', head}
  end
elseif ARGV[14] == 'collect' then
  -- Open while its window lasts, and for as long as it waits behind the session's earlier runs.
  local last = redis.call('LINDEX', KEYS[6], -1)
  if last then
    local run_key = ARGV[16] .. last
    local open = redis.call('HMGET', run_key, 'kind', 'status', 'collectUntil', 'input', 'collected')
    local waiting = redis.call('LINDEX', KEYS[6], 0) ~= last
    if open[1] == 'collect' and open[2] == 'queued' and (waiting or now < tonumber(open[3] or '0')) then
      local message = cjson.decode(open[4])
      message['content'][1]['text'] = message['content'][1]['text'] .. '\n' .. ARGV[15]
      redis.call('HSET', run_key, 'input', cjson.encode(message), 'collected', tonumber(open[5] or '1') + 1)
      redis.call('HSET', KEYS[1], 'updatedAt', now)
      redis.call('SET', KEYS[15], last, 'PX', ARGV[17])
      return {'folded', last}
    end
  end
end
-- A send or spawn counts against its chain's window, the first one opening it; one past the most is
-- refused before anything is written (docs/contract.md §4, "Chains").
local max_sends = tonumber(ARGV[21] or '0')
if max_sends > 0 then
  local sends = redis.call('INCR', KEYS[17])
  if sends == 1 then
    redis.call('PEXPIRE', KEYS[17], tonumber(ARGV[22]))
  end
  if sends > max_sends then
    redis.call('DECR', KEYS[17])
    return {'chain_full'}
  end
end
if ARGV[8] ~= '' then
  hset_object(KEYS[10], ARGV[8])
  redis.call('ZADD', KEYS[11], ARGV[9], ARGV[2])
end
-- The session's fields (its first ones when it is new, those this message sets, its activity) in one write.
local session = {}
if redis.call('EXISTS', KEYS[1]) == 0 then
  session = cjson.decode(ARGV[4])
  redis.call('SET', KEYS[5], ARGV[3])
end
for field, value in pairs(cjson.decode(ARGV[5])) do
  session[field] = value
end
session['updatedAt'] = now
hset_fields(KEYS[1], session)
record_state(KEYS[1], KEYS[16], ARGV[18], now, ARGV[3], cjson.decode(ARGV[19]))
for i = 2, 4 do
  redis.call('ZADD', KEYS[i], now, ARGV[3])
end
local seq = redis.call('HINCRBY', KEYS[1], 'runSeq', 1)
local run = cjson.decode(ARGV[6])
run['seq'] = seq
run['status'] = 'queued'
run['createdAt'] = now
run['attempts'] = 0
redis.call('XADD', KEYS[8], '*', 'type', 'queued', 'at', now)
redis.call('HINCRBY', KEYS[12], ARGV[10], 1)
redis.call('XADD', KEYS[13], 'MAXLEN', '~', 1000, '*', 'runId', ARGV[2])
local position = redis.call('RPUSH', KEYS[6], ARGV[2])
local pushed = 0
if position == 1 then
  redis.call('ZADD', KEYS[9], now + tonumber(ARGV[7]), ARGV[3])
  if ARGV[11] ~= '' then
    redis.call('LPUSH', KEYS[14], ARGV[11])
    if ARGV[12] ~= '' then
      redis.call('PUBLISH', ARGV[12], ARGV[13])
    end
    pushed = 1
  end
end
-- The run's fields in one write.
hset_fields(KEYS[7], run)
return {seq, position, pushed}
