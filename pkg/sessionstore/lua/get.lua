-- Get (with lib_touch and lib_record).
-- KEYS: rec, subs, streams.
-- ARGV: ttl ms, now (unix ms), cached version ('' if none).
-- Reply: nil if there is no record; {'='} if the record's version is the
-- cached one; else the record's HGETALL.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
return record(ARGV[3])
