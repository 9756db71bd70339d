-- dropclaims() deletes every claim listed in the rq set KEYS[4] (whose
-- name followed by ':' is the prefix of the claim keys), then the set.
--
-- Not in KEYS: the claim keys, derived from KEYS[4]. As for droplogs, they
-- cannot be declared without a first round trip that would break the
-- atomicity of Create and Delete; they share the session's hash tag.
local function dropclaims()
  for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    redis.call('DEL', KEYS[4] .. ':' .. m)
  end
  redis.call('DEL', KEYS[4])
end
