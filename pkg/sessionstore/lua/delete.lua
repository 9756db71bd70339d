-- Delete (with lib_droplogs and lib_dropclaims).
-- KEYS: rec, subs, streams, rq.
-- ARGV: event-log key prefix.
-- Reply: 1 deleted, 0 if there was no record.
local n = redis.call('DEL', KEYS[1])
droplogs()
dropclaims()
return n
