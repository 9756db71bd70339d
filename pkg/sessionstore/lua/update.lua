-- Update (with lib_touch).
-- KEYS: rec, subs, streams.
-- ARGV: ttl ms, field, value, ... (always lastSeen).
-- Reply: 1, or 0 if there is no record. The record's version goes up by
-- one.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HINCRBY', KEYS[1], 'ver', 1)
touch(ARGV[1])
return 1
