-- Delete (with lib_dropsession).
-- KEYS: rec, subs, streams, rq, then those of dropsession: the log and
--       once set of each stream named in ARGV, the claim key of each rq
--       member named in ARGV.
-- ARGV: those of dropsession (n, m, the n stream names, the m members).
-- Reply: 1 deleted, 0 if there was no record (its leftovers, if any, are
-- deleted all the same); or, changing nothing, the {streams, members}
-- whose keys were not declared (see dropsession: the caller runs the
-- script again with them).
local missing = dropsession()
if missing then return missing end
return redis.call('DEL', KEYS[1])
