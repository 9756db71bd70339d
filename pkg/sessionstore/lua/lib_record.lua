-- record(v) is the reply for a reader that holds version v of the record
-- KEYS[1] ('' for none): {'='} when v is current, else the record's HGETALL.
local function record(v)
  if v ~= '' and redis.call('HGET', KEYS[1], 'ver') == v then return {'='} end
  return redis.call('HGETALL', KEYS[1])
end
