-- oncekey(logprefix, stream) is the key of the once set of stream (the
-- keys of AppendOnce, see append_once.lua), derived from the session's
-- event-log key prefix: 'P:{S}:ev:' becomes 'P:{S}:once:', followed by the
-- stream name (Redis.onceKey in Go).
--
-- Where a script derives it (droplogs, the sweep of append.lua) it is not
-- in KEYS, like the event logs it goes with, and for the same reason: it
-- cannot be declared without a first round trip. It shares the session's
-- hash tag {S}, hence its Redis Cluster slot, so the script stays
-- cluster-safe.
local function oncekey(logprefix, stream)
  return string.sub(logprefix, 1, -4) .. 'once:' .. stream
end
