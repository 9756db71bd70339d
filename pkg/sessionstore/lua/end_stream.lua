-- EndStream.
-- KEYS: rec, subs, streams, the stream's log.
-- ARGV: stream, grace ms (0: at once).
-- Reply: 1, or 0 if there is no record.
--
-- With a grace, the stream's field is negated (ended: the next append that
-- starts a stream drops it once the log is gone) and its log expires
-- within the grace; without one, both go now.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local v = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if v == 0 then return 1 end
local grace = tonumber(ARGV[2])
if grace <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[1], ARGV[1] .. '#seq')
  redis.call('DEL', KEYS[4])
  return 1
end
if v > 0 then redis.call('HSET', KEYS[3], ARGV[1], -v) end
local pttl = redis.call('PTTL', KEYS[4])
if pttl == -1 or pttl > grace then redis.call('PEXPIRE', KEYS[4], grace) end
return 1
