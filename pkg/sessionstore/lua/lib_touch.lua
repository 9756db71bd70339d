-- touch(ttl) slides the session's expiry: KEYS[1] rec, KEYS[2] subs and
-- KEYS[3] streams get the same one. PEXPIRE on a missing key is a no-op.
local function touch(ttl)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
