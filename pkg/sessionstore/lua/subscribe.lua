-- Subscribe and Unsubscribe (with lib_touch).
-- KEYS: rec, subs, streams.
-- ARGV: ttl ms, now (unix ms), op ('SADD' or 'SREM'), uri.
-- Reply: 1, or 0 if there is no record.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[3] == 'SADD' then
  redis.call('SADD', KEYS[2], ARGV[4])
else
  redis.call('SREM', KEYS[2], ARGV[4])
end
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
return 1
