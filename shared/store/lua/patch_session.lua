-- Patch a session entry. Labels are unique within an agent: the label index and the entry change together.
-- KEYS: 1 session, 2 the agent's label index
-- ARGV: 1 session key, 2 fields to set (json object, without label), 3 fields to delete (json array),
--       4 label action ('keep' | 'set' | 'clear'), 5 new label
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'missing'}
end
local old_label = redis.call('HGET', KEYS[1], 'label')
if ARGV[4] == 'set' then
  local holder = redis.call('HGET', KEYS[2], ARGV[5])
  if holder and holder ~= ARGV[1] then
    return {'label_taken', holder}
  end
end
if ARGV[4] ~= 'keep' and old_label and redis.call('HGET', KEYS[2], old_label) == ARGV[1] then
  redis.call('HDEL', KEYS[2], old_label)
end
if ARGV[4] == 'set' then
  redis.call('HSET', KEYS[2], ARGV[5], ARGV[1])
  redis.call('HSET', KEYS[1], 'label', ARGV[5])
elseif ARGV[4] == 'clear' then
  redis.call('HDEL', KEYS[1], 'label')
end
hset_object(KEYS[1], ARGV[2])
for _, field in ipairs(cjson.decode(ARGV[3])) do
  redis.call('HDEL', KEYS[1], field)
end
return {'ok'}
