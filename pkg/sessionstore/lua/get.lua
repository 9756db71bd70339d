-- Get (with lib_touch and lib_record).
-- KEYS: rec, subs, streams.
-- ARGV: ttl ms, slid ttl ms (ttl plus the slack: see slide), cached
-- version ('' if none).
-- Reply: nil if there is no record; {'='} if the record's version is the
-- cached one; else the record's HGETALL.
if not slide(ARGV[1], ARGV[2]) then return false end
return (record(ARGV[3]))
