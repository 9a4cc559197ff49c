-- Reserve a model call's worst-case spend against its agent's day and its sub-agent tree, or refuse the
-- call: a budget is never passed by more than rounding (docs/architecture.md, "Budgets").
-- An owner's runtime budget (KEYS 2) stands over the configuration's; -1 is no limit. A model without a
-- price reserves no USD: it counts against tokens only.
-- A reservation is a hold that lapses (ARGV 10) unless the call settles it first: the holds of a worker
-- killed mid-call are given back here, by the next reservation of any agent.
-- KEYS: 1 the agent's day, 2 the agent's runtime budget, 3 the tree's spend, 4 trees active, 5 holds by
--       expiry, 6 each hold's amounts and keys
-- ARGV: 1 day's USD limit (micro-USD, -1: none), 2 day's token limit (-1: none), 3 tree USD limit
--       (micro-USD, -1: none), 4 reserved micro-USD, 5 reserved tokens, 6 day key ttl s, 7 now ms,
--       8 root session ('' : the call is no sub-agent's), 9 hold id, 10 hold expiry ms, 11 the model's
--       calls in flight ('': none): sent in one round trip after the call's admission
--       (admit_call.lua), the reservation is made only if that admitted the call (its ticket, the hold id,
--       is in flight)
-- Returns {'ok'}, {'over', which, spent, limit} or {'unadmitted'}.
if ARGV[11] and ARGV[11] ~= '' and not redis.call('ZSCORE', ARGV[11], ARGV[9]) then
  return {'unadmitted'}
end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[7], 'LIMIT', 0, 100)
for _, hold in ipairs(lapsed) do
  local held = redis.call('HGET', KEYS[6], hold)
  if held then
    local usd, tokens, day, tree = string.match(held, '^(%-?%d+)|(%-?%d+)|([^|]*)|(.*)$')
    -- 0 - x, not -x: -0 reaches Redis as '-0', which HINCRBY refuses (an unpriced model holds 0 USD).
    redis.call('HINCRBY', day, 'usdMicros', 0 - tonumber(usd))
    redis.call('HINCRBY', day, 'tokens', 0 - tonumber(tokens))
    if tree ~= '' then
      redis.call('HINCRBY', tree, 'usdMicros', 0 - tonumber(usd))
      redis.call('HINCRBY', tree, 'tokens', 0 - tonumber(tokens))
    end
  end
  redis.call('ZREM', KEYS[5], hold)
  redis.call('HDEL', KEYS[6], hold)
end

local runtime = redis.call('HMGET', KEYS[2], 'dailyUsdMicros', 'dailyTokens')
local usd_limit = tonumber(runtime[1] or ARGV[1])
local token_limit = tonumber(runtime[2] or ARGV[2])
local spent = redis.call('HMGET', KEYS[1], 'usdMicros', 'tokens')
local usd = tonumber(spent[1] or '0')
local tokens = tonumber(spent[2] or '0')
local reserve_usd = tonumber(ARGV[4])
local reserve_tokens = tonumber(ARGV[5])
if usd_limit >= 0 and reserve_usd > 0 and usd + reserve_usd > usd_limit then
  return {'over', 'dailyUsd', tostring(usd), tostring(usd_limit)}
end
if token_limit >= 0 and tokens + reserve_tokens > token_limit then
  return {'over', 'dailyTokens', tostring(tokens), tostring(token_limit)}
end
local root = ARGV[8]
local tree_limit = tonumber(ARGV[3])
if root ~= '' and tree_limit >= 0 and reserve_usd > 0 then
  local tree = tonumber(redis.call('HGET', KEYS[3], 'usdMicros') or '0')
  if tree + reserve_usd > tree_limit then
    return {'over', 'maxTreeCostUsd', tostring(tree), tostring(tree_limit)}
  end
end
redis.call('HINCRBY', KEYS[1], 'usdMicros', reserve_usd)
redis.call('HINCRBY', KEYS[1], 'tokens', reserve_tokens)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[6]))
local tree_key = ''
if root ~= '' then
  tree_key = KEYS[3]
  redis.call('HINCRBY', KEYS[3], 'usdMicros', reserve_usd)
  redis.call('HINCRBY', KEYS[3], 'tokens', reserve_tokens)
  redis.call('EXPIRE', KEYS[3], tonumber(ARGV[6]))
  redis.call('ZADD', KEYS[4], tonumber(ARGV[7]), root)
end
redis.call('ZADD', KEYS[5], tonumber(ARGV[10]), ARGV[9])
redis.call('HSET', KEYS[6], ARGV[9], reserve_usd .. '|' .. reserve_tokens .. '|' .. KEYS[1] .. '|' .. tree_key)
return {'ok'}
