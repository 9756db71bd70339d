-- The sweep of a session's streams after the first append to one of them
-- (see append.lua), as a script of its own so that it is given the keys
-- it touches.
-- KEYS: streams, then the log and the once set of each stream named in
--       ARGV (in that order: log, once set, ...).
-- ARGV: MaxStreamsPerSession (0: no cap), the stream just started (never
--       swept), the names of the streams whose keys are declared.
-- Reply: {} once swept; else, having swept only the ended streams, the
-- names of the streams beyond the cap whose keys were not declared (they
-- started after append.lua named the others): the caller runs the script
-- again with them.
--
-- Ended streams (negated field) whose log is gone (their grace passed)
-- lose their field, their '<stream>#seq' field and their once set. Then,
-- beyond MaxStreamsPerSession with the new one, the streams whose log
-- expires first (ended ones, then the least recently appended) go with
-- their log, once set and fields. Streams that are not declared are left
-- as they are, but for the count.
local slot = {}
for i = 3, #ARGV do slot[ARGV[i]] = 2 * (i - 2) end -- KEYS[slot] log, KEYS[slot + 1] once set
local all = redis.call('HGETALL', KEYS[1])
local live, missing, others = {}, {}, 0
for i = 1, #all, 2 do
  local name, v = all[i], tonumber(all[i + 1])
  if name ~= ARGV[2] and not string.find(name, '#', 1, true) then
    local k = slot[name]
    if not k then
      others = others + 1
      missing[#missing + 1] = name
    else
      local pttl = redis.call('PTTL', KEYS[k])
      if v < 0 and pttl == -2 then
        redis.call('HDEL', KEYS[1], name, name .. '#seq')
        redis.call('DEL', KEYS[k + 1])
      else
        others = others + 1
        live[#live + 1] = {k, pttl, name}
      end
    end
  end
end
local max = tonumber(ARGV[1])
if max <= 0 or others + 1 <= max then return {} end
if #missing > 0 then return missing end
table.sort(live, function(a, b) return a[2] < b[2] end)
for i = 1, others + 1 - max do
  local k, name = live[i][1], live[i][3]
  redis.call('HDEL', KEYS[1], name, name .. '#seq')
  redis.call('DEL', KEYS[k], KEYS[k + 1])
end
return {}
