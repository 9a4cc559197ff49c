-- A model call is over: its hold on a place in flight ends, its tokens become what the provider says it
-- used, and what the provider's answer taught is kept (a cooldown after a 429, limits from its headers).
-- Applied twice (a repeat after a lost reply), it changes nothing more but the counters.
-- KEYS: 1 window, 2 tokens, 3 inflight, 4 cooldown, 5-8 unused, 9 state
-- ARGV: 1 ticket, 2 tokens used (-1: unknown, the reservation stands), 3 cooldown ms (0: none),
--       4 learned requests/min (0: none), 5 learned tokens/min (0: none), 6 '1' if the provider refused
--       the call for its rate limit, 7 tokens in, 8 tokens out, 9 '1' if the call was never sent (its
--       budget refused it): it leaves the window as if it had not been admitted, 10 configured
--       requests/min (0: none), 11 configured tokens/min (0: none)
-- Tokens reserved and not used, and a call never sent, are given back to the pace too.
redis.call('ZREM', KEYS[3], ARGV[1])
local learned = redis.call('HMGET', KEYS[9], 'learnedRpm', 'learnedTpm')
local rpm = tonumber(ARGV[10])
if rpm == 0 then rpm = tonumber(learned[1] or '0') end
local tpm = tonumber(ARGV[11])
if tpm == 0 then tpm = tonumber(learned[2] or '0') end
local function give_back(field, amount)
  local tat = tonumber(redis.call('HGET', KEYS[9], field) or '0')
  if tat > 0 and amount > 0 then
    redis.call('HSET', KEYS[9], field, tostring(tat - amount))
  end
end
local held = redis.call('HGET', KEYS[2], ARGV[1])
if ARGV[9] == '1' then
  if held then
    redis.call('HINCRBY', KEYS[9], 'windowTokens', 0 - tonumber(held))
    redis.call('HDEL', KEYS[2], ARGV[1])
    if rpm > 0 then give_back('tatRequests', 60000 / rpm) end
    if tpm > 0 then give_back('tatTokens', tonumber(held) * 60000 / tpm) end
  end
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
local used = tonumber(ARGV[2])
if used >= 0 and held then
  redis.call('HSET', KEYS[2], ARGV[1], used)
  redis.call('HINCRBY', KEYS[9], 'windowTokens', used - tonumber(held))
  if tpm > 0 then give_back('tatTokens', (tonumber(held) - used) * 60000 / tpm) end
end
local cooldown = tonumber(ARGV[3])
if cooldown > 0 and redis.call('PTTL', KEYS[4]) < cooldown then
  redis.call('SET', KEYS[4], ARGV[1], 'PX', cooldown)
  redis.call('HINCRBY', KEYS[9], 'cooldowns', 1)
  redis.call('HINCRBY', KEYS[9], 'cooldownMs', cooldown)
end
if tonumber(ARGV[4]) > 0 then
  redis.call('HSET', KEYS[9], 'learnedRpm', ARGV[4])
end
if tonumber(ARGV[5]) > 0 then
  redis.call('HSET', KEYS[9], 'learnedTpm', ARGV[5])
end
if ARGV[6] == '1' then
  redis.call('HINCRBY', KEYS[9], 'rateLimited', 1)
end
redis.call('HINCRBY', KEYS[9], 'tokensIn', tonumber(ARGV[7]))
redis.call('HINCRBY', KEYS[9], 'tokensOut', tonumber(ARGV[8]))
return 1
