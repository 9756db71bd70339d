-- End.
-- KEYS: the claim.
-- ARGV: token.
-- Reply: 1 released, 0 otherwise (no claim, or another token's). The
-- claim's value is '#', a generation, '#' and the token (see begin.lua),
-- or the token alone (older versions).
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local j = string.byte(v, 1) == 35 and string.find(v, '#', 2, true)
if j then v = string.sub(v, j + 1) end
if v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
