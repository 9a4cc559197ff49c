-- Prepended to every clawbus script. Values arrive pre-encoded as strings by shared/store/codec.py.
local function hset_object(key, json)
  local flat = {}
  for field, value in pairs(cjson.decode(json)) do
    flat[#flat + 1] = field
    flat[#flat + 1] = value
  end
  if #flat > 0 then
    redis.call('HSET', key, unpack(flat))
  end
end

local function is_active(status)
  return status == 'queued' or status == 'running'
end

-- Publish a run's end on the completion channel. The signal carries the terminal run (all but its input
-- and memo), so a waiter needs no read to answer; the hash stays the truth. Returns that table.
local function publish_ended(run_key, channel)
  local ended = {}
  local fields = redis.call('HGETALL', run_key)
  for i = 1, #fields, 2 do
    if fields[i] ~= 'input' and fields[i] ~= 'memo' then
      ended[fields[i]] = fields[i + 1]
    end
  end
  redis.call('PUBLISH', channel, cjson.encode(ended))
  return ended
end

-- After a lane lost its head: mark the next run dispatched and keep the lane on the due schedule, or take
-- it off when empty. Returns {tag, next run id, its kind, its flowId} ('' for none).
local function advance_lane(tag, lane, lanes_due, run_prefix, session_key, now, grace_ms)
  local next_run = redis.call('LINDEX', lane, 0)
  if not next_run then
    redis.call('ZREM', lanes_due, session_key)
    return {tag, '', '', ''}
  end
  redis.call('HSET', run_prefix .. next_run, 'dispatchedAt', now)
  redis.call('ZADD', lanes_due, now + grace_ms, session_key)
  local next_fields = redis.call('HMGET', run_prefix .. next_run, 'kind', 'flowId')
  return {tag, next_run, next_fields[1], next_fields[2] or ''}
end

-- Append the runs parked waiting for an ended one, as (id, session, kind) triples, and forget them: the
-- caller enqueues each to resume.
-- The sub-agent gate (agents.defaults.subagents.maxConcurrent): the runs waiting for a place, in order.
-- The first one still active, or nil; runs that ended (cancelled meanwhile) leave the queue.
local function first_waiting(queue, run_prefix)
  while true do
    local first = redis.call('ZRANGE', queue, 0, 0)[1]
    if not first or is_active(redis.call('HGET', run_prefix .. first, 'status')) then
      return first
    end
    redis.call('ZREM', queue, first)
  end
end

-- A gated run ended: its place frees, and the first run waiting is added to ``result`` (as a waiter:
-- id, session, kind) for the caller to dispatch.
local function leave_gate(result, running, queue, run_prefix, run_id)
  if redis.call('ZREM', running, run_id) == 0 then
    return result
  end
  local first = first_waiting(queue, run_prefix)
  if first then
    local fields = redis.call('HMGET', run_prefix .. first, 'sessionKey', 'kind')
    result[#result + 1] = first
    result[#result + 1] = fields[1]
    result[#result + 1] = fields[2]
  end
  return result
end

local function take_waiters(result, waiters, run_prefix)
  for _, waiter in ipairs(redis.call('SMEMBERS', waiters)) do
    local fields = redis.call('HMGET', run_prefix .. waiter, 'sessionKey', 'kind')
    if fields[1] then
      result[#result + 1] = waiter
      result[#result + 1] = fields[1]
      result[#result + 1] = fields[2]
    end
  end
  redis.call('DEL', waiters)
  return result
end

-- What a call that takes members off a schedule answers a repeat of itself with (the call repeated by the
-- client's retry after its reply was lost would find them taken already): its reply, kept under the call's
-- own key for ``ms`` when it took any (docs/architecture.md, "Reliability"). ``kept_reply`` is nil for a
-- call not made before.
local function kept_reply(key)
  local kept = redis.call('GET', key)
  return kept and cjson.decode(kept)
end

local function keep_reply(key, reply, ms)
  if #reply > 0 then
    redis.call('SET', key, cjson.encode(reply), 'PX', ms)
  end
  return reply
end
