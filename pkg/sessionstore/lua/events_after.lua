-- EventsAfter. The rules are those of eventWindow (record.go).
-- KEYS: rec, subs, streams, the stream's log.
-- ARGV: stream, after.
-- Reply: nil if there is no record; -1 if purged; {} if nothing is newer;
-- else {first index, data, data, ...}.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local newest = math.abs(tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')) -- negated: ended
local after = tonumber(ARGV[2])
if newest == 0 and after > 0 then return -1 end
if after >= newest then return {} end
local oldest = newest - redis.call('LLEN', KEYS[4]) + 1
if after + 1 < oldest then return -1 end
local evs = redis.call('LRANGE', KEYS[4], after + 1 - oldest, -1)
table.insert(evs, 1, after + 1)
return evs
