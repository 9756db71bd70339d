-- End, of one claim or of several (the Ends of one pipeline, merged by the
-- batcher on a Redis that is not a cluster: batch.go).
-- KEYS: the claims.
-- ARGV: the token of each claim, ARGV[i] that of KEYS[i].
-- Reply: for each claim, 1 released, 0 otherwise (no claim, or another
-- token's). A claim's value is '#', a generation, '#' and the token (see
-- begin.lua), or the token alone (older versions).
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  local r = 0
  if v then
    local j = string.byte(v, 1) == 35 and string.find(v, '#', 2, true)
    if j then v = string.sub(v, j + 1) end
    if v == ARGV[i] then
      redis.call('DEL', KEYS[i])
      r = 1
    end
  end
  out[i] = r
end
return out
