-- Create (with lib_dropsession).
-- KEYS: rec, subs, streams, rq, then those of dropsession: the log and
--       once set of each stream named in ARGV, the claim key of each rq
--       member named in ARGV.
-- ARGV: those of dropsession (n, m, the n stream names, the m members),
--       then ttl ms, field, value, ...
-- Reply: 1 created, 0 the record exists; or, changing nothing, the
-- {streams, members} of leftovers whose keys were not declared (see
-- dropsession: the caller runs the script again with them). Leftovers of
-- an earlier session with this id are wiped first, in the same step.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local missing = dropsession()
if missing then return missing end
local a = 3 + tonumber(ARGV[1]) + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], unpack(ARGV, a + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[a])
return 1
