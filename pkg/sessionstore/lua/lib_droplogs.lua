-- droplogs() (with lib_oncekey) deletes every event log listed in KEYS[3]
-- streams, whose keys are ARGV[1] (the session's event-log key prefix)
-- followed by the stream name, with its once set (oncekey), then KEYS[2]
-- subs and KEYS[3] streams.
--
-- Not in KEYS: the event-log keys, derived from ARGV[1], and the once
-- sets, derived from it likewise. They cannot be declared without reading
-- streams first, in another round trip that would make Create and Delete
-- no longer atomic. They share the session's hash tag, hence its Redis
-- Cluster slot, so the script stays cluster-safe.
local function droplogs()
  for _, s in ipairs(redis.call('HKEYS', KEYS[3])) do
    redis.call('DEL', ARGV[1] .. s, oncekey(ARGV[1], s))
  end
  redis.call('DEL', KEYS[2], KEYS[3])
end
