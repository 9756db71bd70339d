-- AppendEvent (with lib_touch).
-- KEYS: rec, subs, streams, the stream's log, the stream's once set.
-- ARGV: ttl ms, now (unix ms), stream, data, -MaxEvents,
--       MaxStreamsPerSession (0: no cap).
-- Reply: the event's index, or 0 if there is no record; or, when the
-- streams of the session need a sweep (sweep.lua), {index, the names of
-- the streams it must be given}.
--
-- A stream's field in streams holds the index of its newest event, negated
-- once EndStream ended it (its log then lives out its grace). An append to
-- an ended stream reopens it. The stream's once set (AppendOnce's keys)
-- gets the log's expiry.
--
-- The first append to a stream (index 1) calls for a sweep of the other
-- streams if some of them ended (their field may go, if their log did) or
-- if there are more than MaxStreamsPerSession with this one (the excess
-- goes). This script cannot do it: the other streams' logs and once sets
-- are not in KEYS. It names them instead: the ended streams, or, beyond
-- the cap, all the others; the caller then runs sweep.lua with their keys
-- declared.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '0')
if cur < 0 then redis.call('HSET', KEYS[3], ARGV[3], -cur) end
local idx = redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('LTRIM', KEYS[4], ARGV[5], -1)
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[2])
touch(ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
redis.call('PEXPIRE', KEYS[5], ARGV[1])
if idx ~= 1 then return idx end
local all = redis.call('HGETALL', KEYS[3])
local others, ended = {}, {}
for i = 1, #all, 2 do
  local name = all[i]
  -- '<stream>#seq' fields (AppendEventSeq's) are not streams: they go
  -- with their stream.
  if name ~= ARGV[3] and not string.find(name, '#', 1, true) then
    others[#others + 1] = name
    if tonumber(all[i + 1]) < 0 then ended[#ended + 1] = name end
  end
end
local max = tonumber(ARGV[6])
local sweep = ended
if max > 0 and #others + 1 > max then sweep = others end
if #sweep == 0 then return idx end
table.insert(sweep, 1, idx)
return sweep
