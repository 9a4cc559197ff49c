-- A call is over: its hold becomes what it spent. A hold that lapsed meanwhile was given back already
-- (reserve_budget.lua): then the whole spend is added. Applied twice (a repeat after a lost reply), the
-- second finds no hold and adds the spend again: over-counted, never under.
-- KEYS: 1 holds by expiry, 2 each hold's amounts and keys
-- ARGV: 1 hold id, 2 spent micro-USD, 3 spent tokens, 4 the agent's day key, 5 the tree's key ('' none),
--       6 the chain's key ('' none)
local usd = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
local day, tree, chain = ARGV[4], ARGV[5], ARGV[6] or ''
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  local held_usd, held_tokens
  held_usd, held_tokens, day, tree, chain = hold_parts(held)
  usd = usd - held_usd
  tokens = tokens - held_tokens
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
end
redis.call('HINCRBY', day, 'usdMicros', usd)
redis.call('HINCRBY', day, 'tokens', tokens)
for _, spent_key in ipairs({tree, chain}) do
  if spent_key ~= '' then
    redis.call('HINCRBY', spent_key, 'usdMicros', usd)
    redis.call('HINCRBY', spent_key, 'tokens', tokens)
  end
end
return 1
