-- EndStream.
-- KEYS: rec, subs, streams, the stream's log, the stream's once set.
-- ARGV: stream, grace ms (0: at once).
-- Reply: 1, or 0 if there is no record.
--
-- With a grace, the stream's field is negated (ended: the next append that
-- starts a stream drops it once the log is gone) and its log expires
-- within the grace; without one, both go now. The once set (AppendOnce's
-- keys) goes with the log: the same expiry, or now.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local v = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if v == 0 then return 1 end
local grace = tonumber(ARGV[2])
if grace <= 0 then
  redis.call('HDEL', KEYS[3], ARGV[1], ARGV[1] .. '#seq')
  redis.call('DEL', KEYS[4], KEYS[5])
  return 1
end
if v > 0 then redis.call('HSET', KEYS[3], ARGV[1], -v) end
for k = 4, 5 do
  local pttl = redis.call('PTTL', KEYS[k])
  if pttl == -1 or pttl > grace then redis.call('PEXPIRE', KEYS[k], grace) end
end
return 1
