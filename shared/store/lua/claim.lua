-- Claim the lane's head run for one execution attempt: a compare-and-set on (status, lane head, lease).
-- A live lease held by someone else means "busy"; the same Celery task redelivered after its worker was
-- lost (a higher retry count) may take over at once, anyone else waits for the lease to lapse.
-- The first claim appends the run's input message to the transcript, so turns never interleave.
-- A claimed (or exhausted) run comes back with its hash and its session's hash, so the attempt needs no
-- second round trip to load them.
-- A sub-agent run (its task, or a run on its children's reports) first needs a place at the fleet's gate
-- (maxConcurrent, ARGV 8; 0: no gate): without one it joins the gate's queue, in order, and is dispatched
-- again when a place frees ({'gated'}); a place whose lease lapsed (its worker died) is free.
-- A claimed run is followed by the stall watchdog from now (its progress clock starts).
-- The first claim of an agent's turn also takes in its session's pending stale-state notices (docs/contract.md
-- §10, "Watches and notices"): a ``System:`` line each, ahead of the input's text, so the transcript, the
-- model and every later attempt read the same turn; the run keeps which (``noticed``) for its commit to
-- acknowledge.
-- The transcript's tail the run's agent reads (ARGV 12 messages, 0: none), newest first, and whether the
-- transcript has a cold part, come back with the claim: the attempt needs no round trip of its own to read
-- them (a tail that runs into the cold part is read whole by the caller, as any read is).
-- KEYS: 1 run, 2 lane, 3 lease, 4 transcript, 5 run events, 6 lanes due, 7 fence counter, 8 session,
--       9 gate running, 10 gate queue, 11 runs' progress, 12 runs stalled, 13 the session's notices,
--       14 the transcript's cold part
-- A claim sent again by the client's retry, its reply lost with the connection (ARGV 10, the claim's own id,
-- names it), answers as the first one did: the attempt it began is this caller's, not someone else's.
-- ARGV: 1 run id, 2 owner (task id), 3 attempt (task retries), 4 now ms, 5 lease ms, 6 max attempts,
--       7 session key, 8 gate places, 9 run key prefix, 10 claim id, 11 a notice's line (a format: target,
--       target, version; shared/domain/state_events.py NOTICE_LINE), 12 the transcript's tail to read
-- The run, read once: the checks, the attempt's changes and the reply are all made of it.
local run_flat = redis.call('HGETALL', KEYS[1])
local run = hash_table(run_flat)
local status = run['status']
if not status or run['sessionKey'] ~= ARGV[7] then
  return {'missing'}
end
if not is_active(status) then
  return {'done', status}
end
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[1] then
  return {'not_head'}
end
local now = tonumber(ARGV[4])
-- A collect run waits for its window to close: the messages in it are folded in until then.
if run['kind'] == 'collect' and status == 'queued' then
  local until_ms = tonumber(run['collectUntil'] or '0')
  if until_ms > now then
    return {'early', tostring(until_ms - now)}
  end
end
local lease = redis.call('HMGET', KEYS[3], 'owner', 'attempt', 'expiresAt', 'claim', 'token')
if lease[4] == ARGV[10] then
  local attempts = tonumber(run['attempts'])
  return {attempts > tonumber(ARGV[6]) and 'exhausted' or 'claimed', lease[5], tostring(attempts),
    run_flat, redis.call('HGETALL', KEYS[8])}
end
-- A run suspended on a wait (its lease parked until the wait's deadline) is resumed by anyone, and its
-- resumption is not a new attempt.
local resuming = lease[1] == 'suspended'
if lease[3] and tonumber(lease[3]) > now and not resuming then
  local redelivered_after_loss = lease[1] == ARGV[2] and tonumber(ARGV[3]) > tonumber(lease[2])
  if not redelivered_after_loss then
    return {'busy', tostring(tonumber(lease[3]) - now)}
  end
end
local expires = now + tonumber(ARGV[5])
local places = tonumber(ARGV[8])
if places > 0 and (run['kind'] == 'subagent' or run['kind'] == 'report') and not redis.call('ZSCORE', KEYS[9], ARGV[1]) then
  redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', now)
  local first = first_waiting(KEYS[10], ARGV[9])
  if redis.call('ZCARD', KEYS[9]) >= places or (first and first ~= ARGV[1]) then
    if not redis.call('ZSCORE', KEYS[10], ARGV[1]) then
      redis.call('ZADD', KEYS[10], redis.call('INCR', KEYS[7]), ARGV[1])
    end
    return {'gated'}
  end
  redis.call('ZREM', KEYS[10], ARGV[1])
  redis.call('ZADD', KEYS[9], expires, ARGV[1])
end
-- The run's changes, written in one HSET and applied to the copy that goes back.
local changed = {}
local attempts
if resuming then
  attempts = tonumber(run['attempts'] or '1')
else
  attempts = tonumber(run['attempts'] or '0') + 1
  changed['attempts'] = tostring(attempts)
  -- A run already started that is claimed again, not resumed: its attempt began and never ended (its
  -- worker lost, its lease lapsed). That attempt was interrupted, as 2026.9.7 names it; this one retries it.
  if status == 'running' then
    changed['interrupted'] = tostring(tonumber(run['interrupted'] or '0') + 1)
    redis.call('XADD', KEYS[5], '*', 'type', 'interrupted', 'at', now, 'attempt', attempts - 1)
  end
end
local token = redis.call('INCR', KEYS[7])
-- Every field a lease ever holds is written here, so nothing of the one before is left over.
redis.call('HSET', KEYS[3], 'runId', ARGV[1], 'owner', ARGV[2], 'attempt', ARGV[3],
  'token', token, 'expiresAt', expires, 'claim', ARGV[10])
redis.call('ZADD', KEYS[6], expires, ARGV[7])
local function write_run()
  hset_held(KEYS[1], run, changed)
  return flat_fields(run)
end
if attempts > tonumber(ARGV[6]) then
  return {'exhausted', tostring(token), tostring(attempts), write_run(), redis.call('HGETALL', KEYS[8])}
end
local session = hash_table(redis.call('HGETALL', KEYS[8]))
local exists = next(session) ~= nil
local session_changed = {}
local session_dropped = {}
if status == 'queued' then
  changed['status'] = 'running'
  changed['startedAt'] = ARGV[4]
  if exists then
    session_changed['startedAt'] = ARGV[4]
    session_dropped[#session_dropped + 1] = 'endedAt'
  end
end
-- A session nobody spawned shows how its latest run goes (a spawned one, how its task went).
if exists and not session['spawnedBy'] then
  session_changed['status'] = 'running'
end
-- An agent run takes in what the session had not read yet (the fan-out guard counts unread reports).
if run['kind'] ~= 'note' then
  session_dropped[#session_dropped + 1] = 'unreadReports'
end
hset_held(KEYS[8], session, session_changed)
hdel_held(KEYS[8], session, session_dropped)
redis.call('XADD', KEYS[5], '*', 'type', 'started', 'at', now, 'attempt', attempts)
-- The pending notices, written as a text block ahead of the input's own (a user's message only: a note runs
-- no agent), in the order of their targets, and named on the run (``noticed``); none pending, nothing.
local function take_notices()
  if run['kind'] == 'note' or not run['input'] then
    return nil
  end
  local pending = hash_table(redis.call('HGETALL', KEYS[13]))
  local targets = {}
  for target in pairs(pending) do
    targets[#targets + 1] = target
  end
  if #targets == 0 then
    return nil
  end
  local message = cjson.decode(run['input'])
  if message['role'] ~= 'user' or type(message['content']) ~= 'table' then
    return nil
  end
  table.sort(targets)
  local lines = {}
  for i, target in ipairs(targets) do
    lines[i] = string.format(ARGV[11], target, target, pending[target])
  end
  table.insert(message['content'], 1, {type = 'text', text = table.concat(lines, '\n') .. '\n\n'})
  changed['input'] = cjson.encode(message)
  changed['noticed'] = cjson.encode(targets)
  run['input'] = changed['input']
end
if run['inputAppended'] ~= '1' then
  take_notices()
  if run['input'] then
    redis.call('XADD', KEYS[4], '*', 'm', run['input'])
  end
  changed['inputAppended'] = '1'
end
made_progress(KEYS[11], KEYS[12], ARGV[4], ARGV[1], KEYS[1], run['stalled'] or false)
local tail = {}
local cold = 0
local wanted = tonumber(ARGV[12] or '0')
if wanted > 0 then
  for i, entry in ipairs(redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', wanted)) do
    tail[i] = hash_table(entry[2])['m']
  end
  cold = redis.call('HEXISTS', KEYS[14], 'count')
end
return {'claimed', tostring(token), tostring(attempts), write_run(), flat_fields(session), tail, cold}
