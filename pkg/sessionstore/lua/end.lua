-- End.
-- KEYS: rq, the claim.
-- ARGV: token, claim member.
-- Reply: 1 released, 0 otherwise. A member whose claim is gone is dropped
-- too.
local v = redis.call('GET', KEYS[2])
if v and v ~= ARGV[1] then return 0 end
if v then redis.call('DEL', KEYS[2]) end
redis.call('ZREM', KEYS[1], ARGV[2])
if v then return 1 end
return 0
