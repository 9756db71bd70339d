-- Create (with lib_droplogs and lib_dropclaims).
-- KEYS: rec, subs, streams, rq.
-- ARGV: event-log key prefix, ttl ms, field, value, ...
-- Reply: 1 created, 0 the record exists. Leftovers of an earlier session
-- with this id are wiped first.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
droplogs()
dropclaims()
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
