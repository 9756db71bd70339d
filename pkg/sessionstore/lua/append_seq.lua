-- AppendEventSeq (with lib_touch).
-- KEYS: rec, subs, streams, the stream's log, the stream's once set
-- (AppendOnce's keys, which get the log's expiry).
-- ARGV: ttl ms, now (unix ms), stream, data, -MaxEvents, seq.
-- Reply: the event's index; 0 if there is no record; -1 if the stream has
-- no log or seq is not above its last one (kept in streams as the field
-- <stream>#seq; stream names never contain '#'). An ended stream (its
-- field negated by EndStream) whose log is gone has no log; one still in
-- its grace is reopened, as AppendEvent does.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0')
if cur == 0 then return -1 end
if cur < 0 and redis.call('EXISTS', KEYS[4]) == 0 then return -1 end
local field = ARGV[3] .. '#seq'
local last = tonumber(redis.call('HGET', KEYS[3], field) or '0')
if tonumber(ARGV[6]) <= last then return -1 end
redis.call('HSET', KEYS[3], field, ARGV[6])
if cur < 0 then redis.call('HSET', KEYS[3], ARGV[3], -cur) end
local idx = redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('LTRIM', KEYS[4], ARGV[5], -1)
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
redis.call('PEXPIRE', KEYS[5], ARGV[1])
return idx
