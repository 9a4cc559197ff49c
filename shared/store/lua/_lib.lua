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
