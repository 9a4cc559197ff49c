-- Append a delivery's message to an outbox once: an attempt retried after its worker died past the append,
-- or this call sent again after its reply was lost with the connection, finds the entry the first made
-- (its id kept on the delivery) instead of showing the recipient the message twice.
-- KEYS: 1 the outbox stream, 2 the delivery   ARGV: 1 the stream's approximate cap, 2.. field, value pairs
local made = redis.call('HGET', KEYS[2], 'outboxEntry')
if made then
  return made
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, 2))
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'outboxEntry', id)
end
return id
