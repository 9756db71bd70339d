-- AppendEvent (with lib_touch and lib_oncekey).
-- KEYS: rec, subs, streams, the stream's log, the stream's once set.
-- ARGV: ttl ms, now (unix ms), stream, data, -MaxEvents,
--       MaxStreamsPerSession (0: no cap), event-log key prefix.
-- Reply: the event's index, or 0 if there is no record.
--
-- A stream's field in streams holds the index of its newest event, negated
-- once EndStream ended it (its log then lives out its grace). An append to
-- an ended stream reopens it. The first append to a stream sweeps streams:
-- ended streams whose log is gone (their grace passed) lose their field,
-- then, beyond MaxStreamsPerSession, the streams whose log expires first
-- (ended ones, then the least recently appended) go with their log. The
-- log keys and once sets of those streams are derived from the prefix, as
-- in lib_droplogs. The stream's once set (AppendOnce's keys) gets the
-- log's expiry.
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
if idx == 1 then
  local all = redis.call('HGETALL', KEYS[3])
  local live = {}
  for i = 1, #all, 2 do
    local name, v = all[i], tonumber(all[i + 1])
    -- '<stream>#seq' fields (AppendEventSeq's) are not streams: they go
    -- with their stream.
    if name ~= ARGV[3] and not string.find(name, '#', 1, true) then
      local pttl = redis.call('PTTL', ARGV[7] .. name)
      if v < 0 and pttl == -2 then
        redis.call('HDEL', KEYS[3], name, name .. '#seq')
        redis.call('DEL', oncekey(ARGV[7], name))
      else
        live[#live + 1] = {name, pttl}
      end
    end
  end
  local max = tonumber(ARGV[6])
  if max > 0 and #live + 1 > max then
    table.sort(live, function(a, b) return a[2] < b[2] end)
    for i = 1, #live + 1 - max do
      redis.call('HDEL', KEYS[3], live[i][1], live[i][1] .. '#seq')
      redis.call('DEL', ARGV[7] .. live[i][1], oncekey(ARGV[7], live[i][1]))
    end
  end
end
return idx
