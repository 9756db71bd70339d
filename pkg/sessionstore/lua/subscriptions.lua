-- Subscriptions.
-- KEYS: rec, subs, streams.
-- No ARGV.
-- Reply: the members of subs, or nil if there is no record.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('SMEMBERS', KEYS[2])
