-- Prepended to every clawbus script. Values arrive pre-encoded as strings by shared/store/codec.py.

-- A hash's HGETALL reply as a table (field -> value).
local function hash_table(flat)
  local fields = {}
  for i = 1, #flat, 2 do
    fields[flat[i]] = flat[i + 1]
  end
  return fields
end

-- A table of fields as HSET's (or HGETALL's) flat list.
local function flat_fields(fields)
  local flat = {}
  for field, value in pairs(fields) do
    flat[#flat + 1] = field
    flat[#flat + 1] = value
  end
  return flat
end

-- One HSET for every field of the table (none for an empty one).
local function hset_fields(key, fields)
  local flat = flat_fields(fields)
  if #flat > 0 then
    redis.call('HSET', key, unpack(flat))
  end
end

-- hset_fields, ``changes`` also applied to ``fields``, the hash as a table.
local function hset_held(key, fields, changes)
  hset_fields(key, changes)
  for field, value in pairs(changes) do
    fields[field] = value
  end
end

-- One HDEL for those of ``names`` the hash holds (none when it holds none); ``fields`` is the hash as a
-- table, and loses them too.
local function hdel_held(key, fields, names)
  local held = {}
  for _, name in ipairs(names) do
    if fields[name] then
      held[#held + 1] = name
      fields[name] = nil
    end
  end
  if #held > 0 then
    redis.call('HDEL', key, unpack(held))
  end
end

local function hset_object(key, json)
  hset_fields(key, cjson.decode(json))
end

local function is_active(status)
  return status == 'queued' or status == 'running'
end

-- Publish a run's end on the completion channel. The signal carries the terminal run (all but its input
-- and memo), so a waiter needs no read to answer; the hash stays the truth. ``run`` holds the run's fields
-- as they now are. Returns the signal's table.
local function signal_ended(run, channel)
  local ended = {}
  for field, value in pairs(run) do
    if field ~= 'input' and field ~= 'memo' then
      ended[field] = value
    end
  end
  redis.call('PUBLISH', channel, cjson.encode(ended))
  return ended
end

-- signal_ended, the run read from its hash.
local function publish_ended(run_key, channel)
  return signal_ended(hash_table(redis.call('HGETALL', run_key)), channel)
end

-- A lane's new head (nil for none), after it lost its head: keep the lane on the due schedule (the reaper
-- dispatches its head again if no claim came within the grace), or take the lane off when empty. Returns
-- {tag, next run id, its kind, its flowId} ('' for none).
local function dispatch_next(tag, next_run, lanes_due, run_prefix, session_key, now, grace_ms)
  if not next_run then
    redis.call('ZREM', lanes_due, session_key)
    return {tag, '', '', ''}
  end
  redis.call('ZADD', lanes_due, now + grace_ms, session_key)
  local next_fields = redis.call('HMGET', run_prefix .. next_run, 'kind', 'flowId')
  return {tag, next_run, next_fields[1], next_fields[2] or ''}
end

-- dispatch_next, the new head read from the lane.
local function advance_lane(tag, lane, lanes_due, run_prefix, session_key, now, grace_ms)
  return dispatch_next(tag, redis.call('LINDEX', lane, 0), lanes_due, run_prefix, session_key, now, grace_ms)
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
  local members = redis.call('SMEMBERS', waiters)
  for _, waiter in ipairs(members) do
    local fields = redis.call('HMGET', run_prefix .. waiter, 'sessionKey', 'kind')
    if fields[1] then
      result[#result + 1] = waiter
      result[#result + 1] = fields[1]
      result[#result + 1] = fields[2]
    end
  end
  if #members > 0 then
    redis.call('DEL', waiters)
  end
  return result
end

-- A budget hold's record, ``usd|tokens|day key|tree key|chain key`` (a hold written before chains were
-- limited has no chain key): the amounts as numbers, the keys ('' for none).
local function hold_parts(held)
  local parts = {}
  for part in string.gmatch(held .. '|', '([^|]*)|') do
    parts[#parts + 1] = part
  end
  return tonumber(parts[1]), tonumber(parts[2]), parts[3], parts[4] or '', parts[5] or ''
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

-- A run the watchdog recorded stalled says so on its own hash (``stalled``), which the scripts on its hot
-- path read anyway: only such a run's record is deleted there, not every run's on every step. ``marked``:
-- the hash's ``stalled``, or nil for a caller that did not read it (the record is deleted then).
local function unstalled(stalled, run_key, run_id, marked)
  if marked ~= false then
    redis.call('HDEL', stalled, run_id)
  end
  if marked then
    redis.call('HDEL', run_key, 'stalled')
  end
end

-- The run made progress now (claimed, an event, a memoized step): the stall watchdog's clock restarts, and
-- a run it reported stalled is not any more (docs/architecture.md, "The stall watchdog").
local function made_progress(progress, stalled, now, run_id, run_key, marked)
  redis.call('ZADD', progress, now, run_id)
  unstalled(stalled, run_key, run_id, marked)
end

-- The run ended (or was never going to be watched): the watchdog forgets it.
local function left_watch(progress, stalled, run_id, run_key, marked)
  redis.call('ZREM', progress, run_id)
  unstalled(stalled, run_key, run_id, marked)
end

-- Watches and notices (docs/contract.md §10, "Watches and notices"), as the release keeps them: a watcher's
-- cursor on a target holds three of the target's versions, ``lastSeen`` (what the watcher reconciled to),
-- ``notified`` (how far the notice pending covers; equal to lastSeen when none is) and ``material`` (the
-- last change it is to hear of). ``watch`` is the key prefixes (shared/store/runs.py ``watch_prefixes``):
-- watchers (a target's cursors, by watcher), notices (a watcher's pending notices, by target), sessions.
local function cursor_of(text)
  local seen, notified, material = string.match(text or '', '^(%d+),(%d+),(%d+)$')
  if not seen then
    return nil
  end
  return {tonumber(seen), tonumber(notified), tonumber(material)}
end

local function set_cursor(watch, target, watcher, cursor, ttl)
  local key = watch['watchers'] .. target
  redis.call('HSET', key, watcher, cursor[1] .. ',' .. cursor[2] .. ',' .. cursor[3])
  redis.call('EXPIRE', key, ttl)
end

-- The watcher starts at ``version``: every mark there (the release's ``upsertSeedCursor``).
local function seed_watch(watch, target, watcher, version, ttl)
  set_cursor(watch, target, watcher, {version, version, version}, ttl)
end

-- A notice for the pair, naming the version to reconcile from; one per pair, a later one replacing it (the
-- release drops a notice whose text and context are already queued).
local function queue_notice(watch, watcher, target, since, ttl)
  local key = watch['notices'] .. watcher
  redis.call('HSET', key, target, since)
  redis.call('EXPIRE', key, ttl)
end

-- Only an agent's session is notified (the release's ``isNotifiableWatcherKey``).
local function notifiable(watcher)
  return string.match(watcher, '^agent:[^:]+:.') ~= nil
end

-- A notifying change at ``version``: each watcher but its actor has its material mark raised and a notice
-- queued; the notified mark moves only when no notice was pending, so the one pending keeps covering
-- what it did (the release's ``updateMaterialCursor``). The spawner is a watcher even without a cursor. A
-- watcher whose session is gone loses its cursor instead.
local function notify_watchers(watch, target, spawner, actor, version, ttl)
  local cursors = hash_table(redis.call('HGETALL', watch['watchers'] .. target))
  if spawner and not cursors[spawner] then
    cursors[spawner] = '0,0,0'
  end
  for watcher, text in pairs(cursors) do
    if watcher ~= actor and notifiable(watcher) then
      if redis.call('EXISTS', watch['sessions'] .. watcher) == 0 then
        redis.call('HDEL', watch['watchers'] .. target, watcher)
      else
        local cursor = cursor_of(text) or {0, 0, 0}
        if cursor[2] == cursor[1] then
          cursor[2] = version
        end
        cursor[3] = version
        set_cursor(watch, target, watcher, cursor, ttl)
        queue_notice(watch, watcher, target, cursor[1], ttl)
      end
    end
  end
end

-- The watcher's turn that took in the notices of ``targets`` (a JSON list, the run's ``noticed``) is
-- over: each cursor's lastSeen becomes what the notice covered, never the head, lest a change made during
-- the turn be lost (the release's ``acknowledgeSessionStateNotices``); a later one is noticed again, from
-- there.
local function ack_notices(watch, watcher, targets, ttl)
  if not targets or targets == '' then
    return
  end
  local notices = watch['notices'] .. watcher
  for _, target in ipairs(cjson.decode(targets)) do
    local cursor = cursor_of(redis.call('HGET', watch['watchers'] .. target, watcher))
    if not cursor then
      redis.call('HDEL', notices, target)
    else
      local covered = cursor[2]
      cursor[1] = covered
      if cursor[3] > covered then
        cursor[2] = cursor[3]
        queue_notice(watch, watcher, target, covered, ttl)
      else
        redis.call('HDEL', notices, target)
      end
      set_cursor(watch, target, watcher, cursor, ttl)
    end
  end
end

-- Record a state change of a session (docs/contract.md §10, "Change tracking") in the step that makes it,
-- so its ``stateVersion`` is never behind what it counts: the version (a field of the session's hash, which
-- outlives the log's entries) goes up by one and the log gets the event under it, id ``<version>-0``.
-- ``event_json`` is shared/domain/state_events.py's ``encoded()``; ``when = 'spawned'`` records it only
-- for a session with a spawner, ``'watched'`` for one with a spawner or a watcher. Its watchers are told in
-- the same step (``target``: the session's key; ``watch``: as above). The session must exist. Returns the
-- new version, or nil.
local function record_state(session_key, log_key, event_json, now, target, watch)
  if event_json == '' then
    return nil
  end
  local event = cjson.decode(event_json)
  local spawner = redis.call('HGET', session_key, 'spawnedBy')
  if not spawner and (event['when'] == 'spawned' or
      (event['when'] == 'watched' and redis.call('EXISTS', watch['watchers'] .. target) == 0)) then
    return nil
  end
  local version = redis.call('HINCRBY', session_key, 'stateVersion', 1)
  local fields = {'kind', event['kind'], 'actorType', event['actorType'], 'occurredAt', now,
                  'summary', event['summary']}
  for _, name in ipairs({'actorId', 'runId', 'payload'}) do
    if event[name] then
      fields[#fields + 1] = name
      fields[#fields + 1] = event[name]
    end
  end
  local id = version .. '-0'
  local added = redis.pcall('XADD', log_key, 'MAXLEN', '~', event['keep'], id, unpack(fields))
  if type(added) == 'table' and added['err'] then
    -- A log left by an earlier session of the same key holds later ids: it is not this session's.
    redis.call('DEL', log_key)
    redis.call('XADD', log_key, 'MAXLEN', '~', event['keep'], id, unpack(fields))
  end
  redis.call('EXPIRE', log_key, event['ttl'])
  if event['seed'] and event['actorId'] and notifiable(event['actorId']) then
    seed_watch(watch, target, event['actorId'], version, event['ttl'])
  end
  if event['notify'] then
    notify_watchers(watch, target, spawner, event['actorId'], version, event['ttl'])
  end
  return version
end
