-- Reserve a model call's worst-case spend against its agent's day and its sub-agent tree, or refuse the
-- call: a budget is never passed by more than rounding (docs/architecture.md, "Budgets").
-- An owner's runtime budget (KEYS 2) stands over the configuration's; -1 is no limit. A model without a
-- price reserves no USD: it counts against tokens only.
-- A reservation is a hold that lapses (ARGV 10) unless the call settles it first: the holds of a worker
-- killed mid-call are given back here, by the next reservation of any agent.
-- KEYS: 1 the agent's day, 2 the agent's runtime budget, 3 the tree's spend, 4 trees active, 5 holds by
--       expiry, 6 each hold's amounts and keys, 7 the chain's spend
-- ARGV: 1 day's USD limit (micro-USD, -1: none), 2 day's token limit (-1: none), 3 tree USD limit
--       (micro-USD, -1: none), 4 reserved micro-USD, 5 reserved tokens, 6 day key ttl s, 7 now ms,
--       8 root session ('' : the call is no sub-agent's), 9 hold id, 10 hold expiry ms, 11 the model's
--       calls in flight ('': none): sent in one round trip after the call's admission
--       (admit_call.lua), the reservation is made only if that admitted the call (its ticket, the hold id,
--       is in flight), 12 the chain ('': chains are not limited), 13 chain USD limit (micro-USD, -1:
--       none), 14 chain token limit (-1: none)
-- Returns {'ok'}, {'over', which, spent, limit} or {'unadmitted'}.
if ARGV[11] and ARGV[11] ~= '' and not redis.call('ZSCORE', ARGV[11], ARGV[9]) then
  return {'unadmitted'}
end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[7], 'LIMIT', 0, 100)
for _, hold in ipairs(lapsed) do
  local held = redis.call('HGET', KEYS[6], hold)
  if held then
    local usd, tokens, day, tree, chain = hold_parts(held)
    -- 0 - x, not -x: -0 reaches Redis as '-0', which HINCRBY refuses (an unpriced model holds 0 USD).
    redis.call('HINCRBY', day, 'usdMicros', 0 - usd)
    redis.call('HINCRBY', day, 'tokens', 0 - tokens)
    for _, spent_key in ipairs({tree, chain}) do
      if spent_key ~= '' then
        redis.call('HINCRBY', spent_key, 'usdMicros', 0 - usd)
        redis.call('HINCRBY', spent_key, 'tokens', 0 - tokens)
      end
    end
  end
  redis.call('ZREM', KEYS[5], hold)
  redis.call('HDEL', KEYS[6], hold)
end

local reserve_usd = tonumber(ARGV[4])
local reserve_tokens = tonumber(ARGV[5])
-- The refusal of a call that would pass a spend's USD or token limit (-1: none); nil if it passes both.
local function over(key, usd_limit, token_limit, usd_name, token_name)
  local spent = redis.call('HMGET', key, 'usdMicros', 'tokens')
  local usd, tokens = tonumber(spent[1] or '0'), tonumber(spent[2] or '0')
  if usd_limit >= 0 and reserve_usd > 0 and usd + reserve_usd > usd_limit then
    return {'over', usd_name, tostring(usd), tostring(usd_limit)}
  end
  if token_limit >= 0 and tokens + reserve_tokens > token_limit then
    return {'over', token_name, tostring(tokens), tostring(token_limit)}
  end
  return nil
end
local function hold(key)
  redis.call('HINCRBY', key, 'usdMicros', reserve_usd)
  redis.call('HINCRBY', key, 'tokens', reserve_tokens)
  redis.call('EXPIRE', key, tonumber(ARGV[6]))
end

local runtime = redis.call('HMGET', KEYS[2], 'dailyUsdMicros', 'dailyTokens')
local refused = over(KEYS[1], tonumber(runtime[1] or ARGV[1]), tonumber(runtime[2] or ARGV[2]), 'dailyUsd',
  'dailyTokens')
if refused then return refused end
local root = ARGV[8]
if root ~= '' then
  -- A tree counts USD only.
  refused = over(KEYS[3], tonumber(ARGV[3]), -1, 'maxTreeCostUsd', '')
  if refused then return refused end
end
local chain = ARGV[12] or ''
if chain ~= '' then
  refused = over(KEYS[7], tonumber(ARGV[13]), tonumber(ARGV[14]), 'maxChainCostUsd', 'maxChainTokens')
  if refused then return refused end
end
hold(KEYS[1])
local tree_key, chain_key = '', ''
if root ~= '' then
  tree_key = KEYS[3]
  hold(KEYS[3])
  redis.call('ZADD', KEYS[4], tonumber(ARGV[7]), root)
end
if chain ~= '' then
  chain_key = KEYS[7]
  hold(KEYS[7])
end
redis.call('ZADD', KEYS[5], tonumber(ARGV[10]), ARGV[9])
redis.call('HSET', KEYS[6], ARGV[9],
  reserve_usd .. '|' .. reserve_tokens .. '|' .. KEYS[1] .. '|' .. tree_key .. '|' .. chain_key)
return {'ok'}
