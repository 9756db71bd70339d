-- touch(ttl) slides the session's expiry to ttl ms (the Go side passes
-- TTL plus the slack: see slideSlack): KEYS[1] rec, KEYS[2] subs and
-- KEYS[3] streams get the same one. PEXPIRE on a missing key is a no-op.
local function touch(ttl)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end

-- slide(ttl, slid) is the touch of the reads (Get, Begin): false when
-- there is no record KEYS[1]; else true, having slid the three keys to
-- slid (ttl plus a slack) unless the record's expiry is still at least
-- ttl away. So the expiry is at least ttl away afterwards, as after
-- touch, and a busy session pays one PTTL per read and the three
-- PEXPIRE once per slack, not per read.
local function slide(ttl, slid)
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl == -2 then return false end
  if pttl < tonumber(ttl) then touch(slid) end
  return true
end
