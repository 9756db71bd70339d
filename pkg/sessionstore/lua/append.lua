-- AppendEvent (with lib_touch).
-- KEYS: rec, subs, streams, the stream's log.
-- ARGV: ttl ms, now (unix ms), stream, data, -MaxEvents.
-- Reply: the event's index, or 0 if there is no record.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local idx = redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('LTRIM', KEYS[4], ARGV[5], -1)
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
return idx
