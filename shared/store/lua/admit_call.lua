-- Admit one model call within its model's limits, counted together by every worker of the fleet; or say
-- how long the caller should wait, and why (docs/architecture.md, "Model traffic").
-- Callers wait in one queue per model: by class (0 people, 1 agent-to-agent, 2 background), then by fair
-- share (start-time fair queuing: a flow's next call is placed 1000/weight after its previous one, never
-- before its class's virtual time), so one agent's fan-out takes turns with another agent's chat. Only the
-- first waiters, as many as there is room for, may start; a cooldown (a provider's 429) holds every call.
-- Room is the 60 s windows (hard: never more than the limits in any minute) and a pace (GCRA: calls start
-- at the limits' rate, a second's worth at once at most), so a burst of background work cannot take a
-- whole minute's calls at once and leave a person's message waiting for the window to turn.
-- A repeat of this call after its reply was lost counts the call twice: a slot lost for a minute, never
-- one too many.
-- KEYS: 1 window, 2 tokens, 3 inflight, 4 cooldown, 5 queue, 6 queue expiry, 7 queue since, 8 fair,
--       9 state, 10 models index
-- ARGV: 1 waiter (the run), 2 class, 3 flow, 4 weight, 5 requests/min (0: none), 6 tokens/min,
--       7 concurrent, 8 estimated tokens, 9 hold ms (how long a call in flight counts unless settled),
--       10 grace ms (a waiter keeps its place this long past the wait it is told, unless it asks again),
--       11 model ref, 12 run key prefix (a waiter is a run id), 13 the call's ticket if admitted ('': one
--       of the form waiter#seq; the caller names it when it reserves the call's budget in the same round
--       trip, reserve_budget.lua)
-- The time is the server's: workers' clocks may differ, the window is one.
-- Returns {'ok', ticket, waited ms} or {'wait', ms, reason, position}.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local waiter = ARGV[1]
local class = tonumber(ARGV[2])
local weight = tonumber(ARGV[4])
local estimate = tonumber(ARGV[8])
local minute = 60000
redis.call('SADD', KEYS[10], ARGV[11])
redis.call('HINCRBY', KEYS[9], 'asks', 1)

-- Calls started over a minute ago leave the window, with their tokens.
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - minute, 'LIMIT', 0, 1000)
if #old > 0 then
  local freed = 0
  for _, ticket in ipairs(old) do
    freed = freed + tonumber(redis.call('HGET', KEYS[2], ticket) or '0')
    redis.call('HDEL', KEYS[2], ticket)
    redis.call('ZREM', KEYS[1], ticket)
  end
  redis.call('HINCRBY', KEYS[9], 'windowTokens', 0 - freed)
end
-- A call in flight whose hold lapsed belonged to a worker that died: its place is free again.
local lapsed = redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if lapsed > 0 then
  redis.call('HINCRBY', KEYS[9], 'holdsLapsed', lapsed)
end
-- So did a waiter that stopped asking.
local gone = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, 100)
for _, stale in ipairs(gone) do
  redis.call('ZREM', KEYS[5], stale)
  redis.call('ZREM', KEYS[6], stale)
  redis.call('HDEL', KEYS[7], stale)
end

-- The call starts: it enters the window and the calls in flight, and the class's figures count it.
local function start_call(waited)
  local ticket = ARGV[13]
  if not ticket or ticket == '' then
    ticket = waiter .. '#' .. redis.call('HINCRBY', KEYS[9], 'seq', 1)
  end
  redis.call('ZADD', KEYS[1], now, ticket)
  redis.call('HSET', KEYS[2], ticket, estimate)
  redis.call('HINCRBY', KEYS[9], 'windowTokens', estimate)
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[9]), ticket)
  redis.call('HINCRBY', KEYS[9], 'admitted|' .. class, 1)
  local bucket = '+Inf'
  for _, bound in ipairs({10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}) do
    if waited <= bound then
      bucket = tostring(bound)
      break
    end
  end
  redis.call('HINCRBY', KEYS[9], 'wait|' .. class .. '|' .. bucket, 1)
  if waited > 0 then
    redis.call('HINCRBY', KEYS[9], 'waitedMs|' .. class, waited)
    redis.call('HINCRBY', KEYS[9], 'throttled|' .. class, 1)
  end
  return {'ok', ticket, tostring(waited)}
end

-- Nobody waits, no cooldown holds the model and it has no limits, configured or learned: the call starts
-- at once, without the queue's bookkeeping (which only orders calls that wait): half the commands.
if tonumber(ARGV[5]) == 0 and tonumber(ARGV[6]) == 0 and tonumber(ARGV[7]) == 0
    and redis.call('ZCARD', KEYS[5]) == 0 and redis.call('PTTL', KEYS[4]) <= 0 then
  local learned = redis.call('HMGET', KEYS[9], 'learnedRpm', 'learnedTpm')
  if not learned[1] and not learned[2] then
    return start_call(0)
  end
end

local vkey = '_v|' .. class
if not redis.call('ZSCORE', KEYS[5], waiter) then
  local flow = ARGV[3] .. '|' .. class
  local v = tonumber(redis.call('HGET', KEYS[8], vkey) or '0')
  local last = tonumber(redis.call('HGET', KEYS[8], flow) or '0')
  local finish = math.max(v, last) + 1000 / weight
  redis.call('HSET', KEYS[8], flow, tostring(finish))
  redis.call('ZADD', KEYS[5], class * 1e12 + finish, waiter)
  redis.call('HSET', KEYS[7], waiter, now)
  redis.call('HINCRBY', KEYS[9], 'queued|' .. class, 1)
end
redis.call('PEXPIRE', KEYS[8], 3600000)
local function wait(ms, reason, position)
  redis.call('ZADD', KEYS[6], now + ms + tonumber(ARGV[10]), waiter)
  return {'wait', ms, reason, position}
end

local position = redis.call('ZRANK', KEYS[5], waiter)
-- A waiter ahead whose run ended while it was parked (cancelled, say) would hold its place until it lapses:
-- the first ones, those that could take the room, are looked at.
if position > 0 then
  for _, ahead in ipairs(redis.call('ZRANGE', KEYS[5], 0, math.min(position, 16) - 1)) do
    if not is_active(redis.call('HGET', ARGV[12] .. ahead, 'status')) then
      redis.call('ZREM', KEYS[5], ahead)
      redis.call('ZREM', KEYS[6], ahead)
      redis.call('HDEL', KEYS[7], ahead)
    end
  end
  position = redis.call('ZRANK', KEYS[5], waiter)
end
local cooldown = redis.call('PTTL', KEYS[4])
if cooldown > 0 then
  return wait(cooldown, 'cooldown', position)
end

local state = redis.call('HMGET', KEYS[9], 'learnedRpm', 'learnedTpm', 'windowTokens')
local rpm = tonumber(ARGV[5])
if rpm == 0 then rpm = tonumber(state[1] or '0') end
local tpm = tonumber(ARGV[6])
if tpm == 0 then tpm = tonumber(state[2] or '0') end
local used = tonumber(state[3] or '0')
local concurrent = tonumber(ARGV[7])
local started = redis.call('ZCARD', KEYS[1])
local inflight = redis.call('ZCARD', KEYS[3])

local pace = redis.call('HMGET', KEYS[9], 'tatRequests', 'tatTokens')
-- When the next call may start on each pace (its theoretical arrival time), and how far ahead of now a
-- start may be scheduled: a second's worth of calls (of tokens) at once.
local tat_requests = math.max(tonumber(pace[1] or '0'), now)
local tat_tokens = math.max(tonumber(pace[2] or '0'), now)
local request_interval = rpm > 0 and minute / rpm or 0
local token_interval = tpm > 0 and minute / tpm or 0
local request_burst = request_interval * (math.max(math.floor(rpm / 60), 1) - 1)

if rpm > 0 and position >= rpm - started then
  -- The window entry whose leaving makes room for this waiter.
  local needed = position - (rpm - started)
  local entry = redis.call('ZRANGE', KEYS[1], needed, needed, 'WITHSCORES')
  local ms = minute
  if #entry == 2 then
    ms = tonumber(entry[2]) + minute - now
  else
    ms = minute + math.floor((needed - started + 1) * minute / rpm)
  end
  return wait(math.max(ms, 1), 'requests', position)
end
if rpm > 0 then
  local ahead = tat_requests + position * request_interval - now - request_burst
  if ahead > 0 then
    return wait(math.max(math.ceil(ahead), 1), 'requests', position)
  end
end
if concurrent > 0 and position >= concurrent - inflight then
  -- Nothing says when a call in flight ends: ask again soon, later the further back in the queue.
  return wait(math.min(25 * (position - (concurrent - inflight) + 1), 1000), 'concurrent', position)
end
if tpm > 0 and used > 0 and used + estimate > tpm then
  local entries = redis.call('ZRANGE', KEYS[1], 0, 999, 'WITHSCORES')
  local freed = 0
  for i = 1, #entries, 2 do
    freed = freed + tonumber(redis.call('HGET', KEYS[2], entries[i]) or '0')
    if used - freed + estimate <= tpm then
      return wait(math.max(tonumber(entries[i + 1]) + minute - now, 1), 'tokens', position)
    end
  end
  return wait(minute, 'tokens', position)
end
if tpm > 0 then
  local ahead = tat_tokens + position * estimate * token_interval - now - 1000
  if ahead > 0 then
    return wait(math.max(math.ceil(ahead), 1), 'tokens', position)
  end
end

local score = tonumber(redis.call('ZSCORE', KEYS[5], waiter))
local since = tonumber(redis.call('HGET', KEYS[7], waiter) or now)
redis.call('ZREM', KEYS[5], waiter)
redis.call('ZREM', KEYS[6], waiter)
redis.call('HDEL', KEYS[7], waiter)
-- The class's virtual time moves on to where this call's share began.
local began = score - class * 1e12 - 1000 / weight
if began > tonumber(redis.call('HGET', KEYS[8], vkey) or '0') then
  redis.call('HSET', KEYS[8], vkey, tostring(began))
end
redis.call('HSET', KEYS[9], 'tatRequests', tostring(tat_requests + request_interval),
  'tatTokens', tostring(tat_tokens + estimate * token_interval))
return start_call(now - since)
