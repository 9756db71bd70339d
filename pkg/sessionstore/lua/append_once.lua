-- AppendOnce, one message (with lib_touch).
-- KEYS: rec, subs, streams, the stream's log, the stream's once set.
-- ARGV: ttl ms, now (unix ms), stream, data, -MaxEvents, key digest,
--       uri ('' for none), MaxEvents.
-- Reply: {status, index}, the status numbered as AppendStatus numbers it:
-- 0 appended (index: the event's), 1 duplicate (index: the one the key
-- got), 2 no log, 3 not subscribed, 4 no record (index 0 for those).
--
-- The stream has no log as for append_seq.lua: no field in streams, or an
-- ended one (negated) whose log is gone. The once set holds the digests
-- of the keys of the stream's last MaxEvents appends made by AppendOnce,
-- scored by their index; it gets the log's expiry whenever the log does
-- (here, in append.lua, append_seq.lua and end_stream.lua) and goes with
-- the log (lib_dropsession, sweep.lua, end_stream.lua).
if redis.call('EXISTS', KEYS[1]) == 0 then return {4, 0} end
if ARGV[7] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[7]) == 0 then
  return {3, 0}
end
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0')
if cur == 0 then return {2, 0} end
if cur < 0 and redis.call('EXISTS', KEYS[4]) == 0 then return {2, 0} end
local seen = redis.call('ZSCORE', KEYS[5], ARGV[6])
if seen then return {1, tonumber(seen)} end
if cur < 0 then redis.call('HSET', KEYS[3], ARGV[3], -cur) end
local idx = redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('LTRIM', KEYS[4], ARGV[5], -1)
redis.call('ZADD', KEYS[5], idx, ARGV[6])
redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -1 - tonumber(ARGV[8]))
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
redis.call('PEXPIRE', KEYS[5], ARGV[1])
return {0, idx}
