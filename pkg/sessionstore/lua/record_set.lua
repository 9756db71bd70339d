-- SetRecord.
-- KEYS: the record.
-- ARGV: version, data.
-- Reply: 1 set, 0 conflict (another version), -1 the record is gone.
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return -1 end
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tonumber(v) + 1, 'd', ARGV[2])
return 1
