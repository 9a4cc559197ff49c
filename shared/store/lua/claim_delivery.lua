-- Take a pending delivery for one attempt, unless another attempt holds it (until its lease lapses).
-- KEYS: 1 delivery   ARGV: 1 now ms, 2 lease ms, 3 owner
local fields = redis.call('HMGET', KEYS[1], 'status', 'owner', 'leaseUntil')
if not fields[1] then
  return {'missing'}
end
if fields[1] ~= 'pending' then
  return {'done', fields[1]}
end
if fields[3] and tonumber(fields[3]) > tonumber(ARGV[1]) and fields[2] ~= ARGV[3] then
  return {'busy'}
end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[3], 'leaseUntil', tonumber(ARGV[1]) + tonumber(ARGV[2]),
  'updatedAt', ARGV[1])
return {'claimed', tostring(attempts)}
