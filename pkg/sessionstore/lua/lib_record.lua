-- record(v) is the reply for a reader that holds version v of the record
-- KEYS[1] ('' for none): {'='} when v is current, else the record's
-- HGETALL. Its second result is the record's generation: its gen field
-- (set by Create), or 'c' and createdAt for a record written by a
-- version that did not set one; no generation holds a '#'.
local function generation(gen, createdAt)
  if gen then return gen end
  return 'c' .. (createdAt or '')
end

local function record(v)
  if v ~= '' then
    local h = redis.call('HMGET', KEYS[1], 'ver', 'gen', 'createdAt')
    if h[1] == v then return {'='}, generation(h[2], h[3]) end
  end
  local all = redis.call('HGETALL', KEYS[1])
  local f = {}
  for i = 1, #all, 2 do f[all[i]] = all[i + 1] end
  return all, generation(f['gen'], f['createdAt'])
end
