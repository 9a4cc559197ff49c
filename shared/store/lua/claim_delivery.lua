-- Take a pending delivery for one attempt, unless another attempt holds it (until its lease lapses). The
-- same owner takes it again (its task message delivered again) as another attempt.
-- The claim that took it is kept on the delivery (claim, ARGV 4's id): the same call sent again by the
-- client's retry, its reply lost with the connection, answers as the first did, without counting another
-- attempt (which would fail the delivery one attempt early).
-- KEYS: 1 delivery   ARGV: 1 now ms, 2 lease ms, 3 owner, 4 claim id
local fields = redis.call('HMGET', KEYS[1], 'status', 'owner', 'leaseUntil', 'claim', 'attempts')
if not fields[1] then
  return {'missing'}
end
if fields[1] ~= 'pending' then
  return {'done', fields[1]}
end
if fields[4] == ARGV[4] then
  return {'claimed', fields[5]}
end
if fields[3] and tonumber(fields[3]) > tonumber(ARGV[1]) and fields[2] ~= ARGV[3] then
  return {'busy'}
end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[3], 'leaseUntil', tonumber(ARGV[1]) + tonumber(ARGV[2]),
  'updatedAt', ARGV[1], 'claim', ARGV[4])
return {'claimed', tostring(attempts)}
